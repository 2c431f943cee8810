"""Regression tests for the bad inputs of ``shared/findings/newcomer-reproducers.md`` (issue 27):
tracebacks on models with fewer hidden units than heads, over-long integers, inputs accepted with
meaningless output (arrival rates, goodput days and intervals, a model no cluster can hold) and
error messages that named the wrong problem or the wrong spelling of an option.

Each bad input must exit 2 with one ``error:`` line that names the option (as the CLI spells it)
and nothing on stdout; each valid neighbour must still run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fabricsim.cli.app import main

HUGE = "9" * 5000  # past Python's int-str limit of 4,300 digits
LLAMA = {"num_hidden_layers": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
         "max_position_embeddings": 8192, "hidden_act": "silu"}
TRAIN = ["--system", "dgx-a100", "--gpus", "8", "--global-batch", "8", "--seq-len", "512"]
INFER = ["--system", "dgx-a100", "--gpus", "1", "--input-len", "128", "--output-len", "16"]
SERVE = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "1", "--input-len", "64",
         "--output-len", "8", "--requests", "10"]
GOODPUT = ["goodput", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "64", "--global-batch", "64",
           "--seq-len", "2048", "--tp", "8", "--runs", "10"]


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], *words: str) -> str:
    """Run ``argv``; assert the one-line refusal naming every word of ``words``; return the line."""
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == 2, (argv, captured.err[-500:])
    assert captured.out == ""
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err[-500:]
    assert "Traceback" not in captured.err
    for word in words:
        assert word in captured.err, (word, captured.err)
    return captured.err


def accepted(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    rc = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err[-500:]
    return json.loads(captured.out)


def with_model(command: list[str], model: str) -> list[str]:
    """``command`` (words, then options) with ``--model model`` after its words (``plan train``)."""
    words = 2 if command[0] == "plan" else 1
    return [*command[:words], "--model", model, *command[words:]]


def write_model(folder: Path, name: str, **fields: object) -> str:
    path = folder / name
    path.write_text(json.dumps({**LLAMA, **fields}), encoding="utf-8")
    return str(path)


# --- 1. fewer hidden units than attention heads; booleans as integers --------------------------

@pytest.mark.parametrize("command", [["train", *TRAIN], ["infer", *INFER], ["plan", "train", *TRAIN],
                                     ["serve", *INFER[:4], "--arrival-rate", "1", "--requests", "5"]])
def test_hidden_size_below_heads_is_refused_at_the_model(command, tmp_path, capsys):
    model = write_model(tmp_path, "m.json", hidden_size=16, num_attention_heads=32)
    refused(capsys, with_model(command, model), "model", "hidden_size", "num_attention_heads")


def test_hidden_size_below_heads_runs_with_an_explicit_head_dim(tmp_path, capsys):
    model = write_model(tmp_path, "m.json", hidden_size=16, num_attention_heads=32, head_dim=128)
    assert accepted(capsys, ["train", "--model", model, *TRAIN])["fits"] is True
    assert accepted(capsys, ["infer", "--model", model, *INFER])["tpot_s"] > 0


@pytest.mark.parametrize("field", ["hidden_size", "num_attention_heads", "num_hidden_layers", "vocab_size"])
def test_a_boolean_is_not_an_integer_in_a_config_json(field, tmp_path, capsys):
    fields = {"hidden_size": 4096, "num_attention_heads": 32, field: True}
    refused(capsys, ["train", "--model", write_model(tmp_path, "m.json", **fields), *TRAIN], "model", field)


def test_a_boolean_is_not_an_integer_in_a_model_yaml(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text("name: m\nhidden_size: 4096\nnum_attention_heads: 32\nnum_hidden_layers: 2\n"
                    "intermediate_size: 1024\nvocab_size: 1000\nnum_key_value_heads: 8\n"
                    "max_position_embeddings: true\n", encoding="utf-8")
    refused(capsys, ["train", "--model", str(path), *TRAIN], "model", "max_position_embeddings")


# --- 2. integers over 4,300 digits -------------------------------------------------------------

def test_over_long_integers_are_one_line_errors_in_every_input(tmp_path, capsys):
    (tmp_path / "big.yaml").write_text(f"name: x\nhidden_size: {HUGE}\n", encoding="utf-8")
    (tmp_path / "big.json").write_text(f'{{"hidden_size": {HUGE}}}', encoding="utf-8")
    (tmp_path / "rq.jsonl").write_text(f'{{"arrival_s": 0, "input_len": {HUGE}, "output_len": 10}}\n', "utf-8")
    big, digits = str(tmp_path / "big.yaml"), "4300 digits"
    refused(capsys, ["train", "--model", big, *TRAIN], "model", digits)
    refused(capsys, ["train", "--model", str(tmp_path / "big.json"), *TRAIN], "model", digits)
    refused(capsys, ["train", "--model", "llama3-8b", *TRAIN[:1], big, *TRAIN[2:]], "system", digits)
    refused(capsys, ["sweep", big], "spec", digits)
    refused(capsys, ["cost", "--system", "dgx-h100", "--gpus", "8", "--prices", big], "prices", digits)
    refused(capsys, [*GOODPUT, "--days", "1", "--failure-rates", big], "failure-rates", digits)
    refused(capsys, [*SERVE[:7], "--request-trace", str(tmp_path / "rq.jsonl")], "request-trace", "line 1", digits)


def test_an_impossible_yaml_date_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "d.yaml").write_text("name: x\nreleased: 2024-13-45\n", encoding="utf-8")
    refused(capsys, ["train", "--model", str(tmp_path / "d.yaml"), *TRAIN], "model", "unreadable value")


# --- 3. physical bounds ------------------------------------------------------------------------

@pytest.mark.parametrize("rate", ["5e-324", "1e-300", "1e-12"])
def test_an_arrival_rate_past_the_float64_horizon_is_refused(rate, capsys):
    refused(capsys, [*SERVE, "--arrival-rate", rate], "arrival-rate", "give at least")


def test_plan_infer_checks_its_arrival_rate_the_same_way(capsys):
    refused(capsys, ["plan", "infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--input-len",
                     "128", "--output-len", "16", "--tp", "8", "--arrival-rate", "1e-300"], "arrival-rate")


def test_a_slow_but_representable_arrival_rate_still_serves(capsys):
    result = accepted(capsys, [*SERVE, "--arrival-rate", "1e-6"])  # 10 requests over ~10^7 s
    assert result["completed"] == 10 and result["e2e_s"]["p50"] > 0


def test_a_trace_arrival_past_the_horizon_is_refused(tmp_path, capsys):
    (tmp_path / "rq.csv").write_text("arrival_s,input_len,output_len\n0,10,10\n1e300,10,10\n", encoding="utf-8")
    refused(capsys, [*SERVE[:7], "--request-trace", str(tmp_path / "rq.csv")], "request-trace", "line 3")


@pytest.mark.parametrize(("days", "why"), [("5e-324", "launch"), ("1e-9", "launch"), ("0.01", "first checkpoint")])
def test_a_run_too_short_to_keep_any_work_is_refused(days, why, capsys):
    refused(capsys, [*GOODPUT, "--days", days], "days", why)


def test_plan_train_by_goodput_refuses_a_run_shorter_than_its_launch(capsys):
    refused(capsys, ["plan", "train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "64", "--global-batch",
                     "64", "--seq-len", "2048", "--objective", "goodput", "--days", "5e-324"], "days", "launch")


def test_goodput_checks_its_numbers_before_the_layout_fit(capsys):
    unfit = ["goodput", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "8", "--global-batch", "8",
             "--seq-len", "4096", "--tp", "1", "--zero", "0", "--runs", "10"]
    refused(capsys, [*unfit, "--days", "30"], "layout", "does not fit")  # the base really does not fit
    refused(capsys, [*unfit, "--days", "5e-324"], "days")
    refused(capsys, [*unfit, "--days", "30", "--checkpoint-interval", "5e-324"], "checkpoint-interval")


def test_a_checkpoint_interval_shorter_than_a_step_is_refused_not_rounded(capsys):
    line = refused(capsys, [*GOODPUT, "--days", "30", "--checkpoint-interval", "5e-324"], "checkpoint-interval")
    assert "one training step" in line
    step_s = accepted(capsys, [*GOODPUT, "--days", "30"])["step_time_s"]
    honoured = accepted(capsys, [*GOODPUT, "--days", "30", "--checkpoint-interval", str(3 * step_s)])
    assert honoured["checkpoint_interval_s"] == pytest.approx(3 * step_s)


def test_a_model_no_accepted_cluster_can_hold_is_refused(tmp_path, capsys, monkeypatch):
    # 10^6 experts, each token routed to all of them: 5.6e15 parameters. At the default GPU cap
    # (2^20 GPUs with their host memory) that fits on paper; at 1,024 GPUs even FP4 weights do not.
    moe = write_model(tmp_path, "moe.json", hidden_size=4096, num_attention_heads=32, num_local_experts=10**6,
                      num_experts_per_tok=10**6, moe_intermediate_size=14336)
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", "1024")
    for command in (["train", *TRAIN], ["infer", *INFER], ["plan", "train", *TRAIN], ["plan", "infer", *INFER]):
        refused(capsys, with_model(command, moe), "model", "parameters", "FABRICSIM_MAX_GPUS")
    monkeypatch.delenv("FABRICSIM_MAX_GPUS")
    huge = write_model(tmp_path, "huge.json", hidden_size=32768, num_attention_heads=256, num_hidden_layers=128,
                       num_local_experts=10**6, num_experts_per_tok=10**6, moe_intermediate_size=131072)
    refused(capsys, ["train", "--model", huge, *TRAIN], "model", "FP4")


# --- 4. messages -------------------------------------------------------------------------------

@pytest.fixture()
def odd_paths(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "folder.yaml").mkdir()
    return {str(fifo): "not a regular file", "/dev/null": "not a regular file", str(tmp_path): "a directory",
            str(tmp_path / "folder.yaml"): "a directory"}


def test_a_fifo_device_or_folder_is_named_as_such(odd_paths, capsys):
    for path, kind in odd_paths.items():
        refused(capsys, ["train", "--model", path, *TRAIN], "model", kind)
        refused(capsys, ["train", "--model", "llama3-8b", "--system", path, *TRAIN[2:]], "system", kind)
        refused(capsys, [*GOODPUT, "--days", "1", "--failure-rates", path], "failure-rates", kind)


def test_empty_sweep_paths_say_empty(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "s.yaml"
    spec.write_text("tasks:\n  - kind: collective\n    grid: {op: [all-reduce], system: [dgx-h100], gpus: [8], "
                    "size: [1MiB]}\n", encoding="utf-8")
    refused(capsys, ["sweep", ""], "spec", "the path is empty")
    refused(capsys, ["sweep", str(spec), "--db", ""], "db", "the path is empty")
    refused(capsys, ["sweep", str(spec), "--export", " "], "export", "the path is empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize(("argv", "option"), [
    ([*GOODPUT, "--days", "1", "--checkpoint-interval", "soon"], "checkpoint-interval"),
    ([*GOODPUT, "--days", "1", "--failure-rates", "no-such-set"], "failure-rates"),
    ([*GOODPUT, "--days", "1", "--pfs-bandwidth", "1e19"], "pfs-bandwidth"),
    (["traffic", "incast", "--topology", "fat-tree:k=4", "--fidelity", "packet", "--cc-param", "bogus=1"], "cc-param"),
    (["measure", "collective", "--ranks", "2", "--min-bytes", "0"], "min-bytes"),
])
def test_errors_name_the_option_as_the_cli_spells_it(argv, option, capsys):
    line = refused(capsys, argv)
    assert line.startswith(f"error: {option}: "), line


def test_a_size_past_floats_range_is_too_large(capsys):
    line = refused(capsys, ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", HUGE + "B"],
                   "size", "too large")
    assert len(line) < 200


def test_a_request_csv_with_a_byte_order_mark_is_read(tmp_path, capsys):
    path = tmp_path / "rq.csv"
    path.write_bytes(b"\xef\xbb\xbfarrival_s,input_len,output_len\n0,100,10\n0.5,100,10\n")
    assert accepted(capsys, [*SERVE[:7], "--request-trace", str(path)])["requests"] == 2


def test_a_config_json_with_a_byte_order_mark_is_read(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({**LLAMA, "hidden_size": 4096, "num_attention_heads": 32}).encode())
    assert accepted(capsys, ["train", "--model", str(path), *TRAIN])["model"] == tmp_path.name
