"""Every ``validate`` row carries the CLI command that reproduces it (issue 27: re-running SC'21
Table 1 with a generic GPT config.json gave 9.6% where validate printed 7.4%; the differences --
tied embeddings, micro-batch, recomputation, gradient precision -- must be in the command)."""

import json
import shlex
from pathlib import Path

import pytest

from fabricsim import catalog
from fabricsim.cli.app import main
from fabricsim.validation import inference, run_suite, training, training_h100
from fabricsim.validation.base import load_entries
from fabricsim.validation.commands import model_file

EXACT_SUITES = ("training", "training-h100", "training-public", "collectives")


def _output(result: dict, spec: str) -> float:
    """The value ``command_output`` names: ``KEY``, ``KEY x F`` or ``KEY / D``."""
    key, *rest = spec.split()
    value = result[key]
    if rest:
        operator, operand = rest
        value = value * float(operand) if operator == "x" else value / float(operand)
    return value


def _sample(entries: tuple) -> list:
    """A few rows of a suite: first, middle and last (every kind of row the suites have is among them)."""
    picks = sorted({0, len(entries) // 2, len(entries) - 1})
    return [entries[i] for i in picks]


@pytest.mark.parametrize("name", EXACT_SUITES)
def test_sampled_row_commands_reproduce_the_prediction_exactly(name, run_json) -> None:
    result = run_suite(name, catalog)
    for entry in _sample(result.entries):
        assert entry.command and entry.command_output and not entry.command_note, entry.id
        assert _output(run_json(entry.command), entry.command_output) == entry.predicted, entry.id


def test_row_json_carries_the_command_and_the_settings_are_visible(run_json) -> None:
    """The JSON row has ``command``; an SC'21 row names its tied-embedding model file, micro-batch 1,
    full recomputation, fp16, no sequence parallelism, unfused attention, fp16 gradient reduction;
    the Korthikanti rows their own micro-batch and model chunks."""
    result = run_suite("training", catalog)
    rows = {entry.id: entry for entry in result.entries}
    sc21 = rows["megatron-sc21-t1-76b"].to_json()
    assert sc21["command_output"] == "hardware_tflops_per_gpu"
    argv = shlex.split(str(sc21["command"]))
    for flag in ("--micro-batch 1", "--recompute full", "--dtype fp16", "--vpp 1"):
        assert flag in " ".join(argv)
    for switch in ("--no-sequence-parallel", "--no-flash-attention", "--no-grad-reduce-in-fp32",
                   "--no-overlap-grad-reduce"):
        assert switch in argv
    model = catalog.load_model(argv[argv.index("--model") + 1])
    assert model.tie_word_embeddings and model.vocab_size == 51200
    k22 = " ".join(shlex.split(str(rows["korthikanti-22b-mfu-hfu"].command)))
    assert "--micro-batch 4" in k22 and "--recompute selective" in k22 and "--grad-reduce-in-fp32" in k22
    entry = rows["korthikanti-22b-mfu-hfu"]
    assert _output(run_json(entry.command), entry.command_output) == entry.predicted


def test_public_recipe_rows_name_their_recipe_settings(run_json) -> None:
    """The DeepSeek-V3 H100 row's recipe settings are all in its command, and it reproduces."""
    result = run_suite("training-public", catalog)
    entry = next(e for e in result.entries if e.id == "mb2509-h100-deepseek-v3-fp8-1024gpu")
    text = " ".join(shlex.split(entry.command))
    for flag in ("--moe-dispatcher deepep", "--a2a-overlap", "--mtp-layers 1", "--pipeline-layout Et|(tt|)*30mL",
                 "--recompute-modules mla_up_proj,mlp", "--fp8-recipe current", "--cross-entropy te",
                 "--no-grad-reduce-in-fp32", "--expert-tp"):
        assert flag in text
    assert _output(run_json(entry.command), entry.command_output) == entry.predicted


def test_model_files_hold_the_rows_models() -> None:
    """A row built from its own dimensions names a shipped model file; the file loads as that model."""
    def same(a, b) -> bool:
        drop = {"name", "sources"}
        return a.model_dump(exclude=drop) == b.model_dump(exclude=drop)

    for row in load_entries(training.MEGATRON_FILE):
        model = training.gpt_model("gpt", {**training.GPT3_175B, **row["workload"]})
        assert same(catalog.load_model(model_file(training.model_stem(model))), model), row["id"]
    for row in training_h100.rows():
        model = training_h100.row_model(row)
        assert same(catalog.load_model(model_file(training_h100.model_stem(row))), model), row["id"]


def test_rows_without_an_exact_command_say_why() -> None:
    """The CLI cannot express every setting: a kernel row (no command predicts one kernel) and an
    inference row (no KV-fraction option, no offline arrival) carry no command and a note naming
    what is missing, with the nearest command."""
    for entry in run_suite("kernels", catalog).entries:
        assert entry.command is None and "no CLI command" in entry.command_note
        assert "command" in entry.to_json() and entry.to_json()["command"] is None
    row = next(e for e in load_entries(inference.DATA_FILE) if e["workload"]["model"] in inference.MODELS)
    note = inference.command_note(row, catalog)
    assert "KV memory fraction" in note and "--arrival-rate" in note and "fabricsim serve" in note


def test_calibrated_system_rows_carry_their_command(tmp_path, capsys, run_json) -> None:
    """``validate --system FILE``: each residual row names the ``fabricsim collective`` line (the
    system file as given) whose busbw it reports."""
    log = Path(__file__).parents[1] / "calibration" / "data" / "a3mega-16xh100-all_reduce.log"
    system = tmp_path / "a3mega.yaml"
    assert main(["calibrate", "nccl-tests", str(log), "--system", "dgx-h100", "--out", str(system)]) == 0
    capsys.readouterr()
    assert main(["validate", "--system", str(system), "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["suites"][0]["entries"]
    for entry in (entries[0], entries[-1]):
        argv = shlex.split(entry["command"])
        assert argv[:2] == ["fabricsim", "collective"] and argv[argv.index("--system") + 1] == str(system)
        assert _output(run_json(entry["command"]), entry["command_output"]) == entry["predicted"]
