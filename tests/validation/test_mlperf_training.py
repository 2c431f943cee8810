"""MLPerf Training as cross-vendor validation (issue 25 item 4): provenance of every row, the
per-vendor and leave-one-vendor-out errors, the commands, and the Done-when targets."""

import math
import re
from statistics import mean, median

import pytest

from fabricsim import catalog
from fabricsim.validation import SUITES, run_suite
from fabricsim.validation import mlperf_training as suite
from fabricsim.validation.base import ValidationEntry
from fabricsim.validation.training_public import row_layout

COMMITS = {
    "4.1": "b87b9e396f77",
    "5.0": "0fdc28f01325",
    "5.1": "441d65f4445c",
}


@pytest.fixture(scope="module")
def result():
    return run_suite("mlperf-training", catalog)


def _by_vendor(result, vendor: str) -> list[float]:
    vendors = {str(r["id"]): r["vendor"] for r in suite.rows()}
    return [abs(e.error) for e in result.entries if vendors[e.id] == vendor]


def test_registered_and_every_row_runs_out_of_sample(result) -> None:
    assert SUITES["mlperf-training"] == "mlperf_training:run"
    ids = [str(row["id"]) for row in suite.rows()]
    assert len(ids) == len(set(ids)) >= 20
    assert [e.id for e in result.entries] == ids  # every shipped row is predicted
    assert all(math.isfinite(e.predicted) and e.predicted > 0 for e in result.entries)
    assert result.calibration.startswith("out-of-sample: no constant fitted on these rows")
    assert {row["vendor"] for row in suite.rows()} == {"nvidia", "amd"}
    assert {row["benchmark"] for row in suite.rows()} == {"gpt3", "llama31_405b", "llama31_8b", "llama2_70b_lora"}
    assert {row["system"] for row in suite.rows() if row["vendor"] == "amd"} == {"mi300x-8", "mi325x-8", "mi355x-8"}


@pytest.mark.parametrize("row", suite.rows(), ids=lambda r: str(r["id"]))
def test_row_names_its_round_commit_log_and_config(row) -> None:
    source = str(row["source"])
    assert f"mlcommons/training_results_v{row['round']} @ {COMMITS[row['round']]}" in source
    org, folder = str(row["submission"]).split("/")
    assert f"{org}/results/{folder}/{row['benchmark']}/result_*.txt" in source
    assert re.search(r"config_\S+\.sh", source)
    assert row["metric"] == "step_time_s" and float(row["value"]) > 0
    # the layout divides: gpus = tp pp cp dp, and the global batch is a whole number of micro-batches per replica
    layout = row_layout(row)
    assert layout.gpus == int(row["gpus"])
    assert int(row["gbs"]) % (layout.data_parallel * int(row["mbs"])) == 0


def test_per_run_figures_bracket_the_value() -> None:
    """The row's value is the median of its runs (AMD: gbs over the median samples/s)."""
    for row in suite.rows():
        if "per_run" in row:
            assert float(row["value"]) == pytest.approx(median(row["per_run"]), abs=1e-4)
        elif "per_run_samples_per_s" in row:
            rate = median(row["per_run_samples_per_s"])
            assert float(row["value"]) == pytest.approx(int(row["gbs"]) / rate, rel=1e-3)


def test_not_added_submissions_are_reported_with_their_reason(result) -> None:
    skipped = dict(result.skipped)
    assert "MI350X" in skipped["v5.1-amd-mi350x-8 (8b and lora)"]
    assert "int8" in skipped["v4.1-google-gpt3-tpu (7 submissions)"]
    assert "int8" in skipped["v4.0-google-gpt3-tpu-v5p (4 submissions)"]
    assert "Stable Diffusion only" in skipped["v5.0-google-tpu"]
    assert "Gaudi 2" in skipped["intel-gaudi"]
    assert all(reason.strip() for reason in skipped.values())
    assert "skipped" in result.to_json()


def test_vendor_errors_are_each_vendors_mean_and_the_mean_of_the_others() -> None:
    def entry(row_id: str, predicted: float) -> ValidationEntry:
        return ValidationEntry(row_id, "step_time_s", "s", 1.0, predicted, "test")

    entries = [entry("a1", 1.1), entry("a2", 0.7), entry("b1", 1.2), entry("c1", 1.0)]
    held = suite.vendor_errors(entries, {"a1": "a", "a2": "a", "b1": "b", "c1": "c"})
    table = {(h.kind, h.group): (round(h.mean_abs_error, 9), h.rows) for h in held}
    assert table[("per-vendor", "a")] == (0.2, 2)
    assert table[("leave-one-vendor-out", "a")] == (0.1, 2)  # b: 0.2, c: 0.0
    assert table[("leave-one-vendor-out", "c")] == (round((0.1 + 0.3 + 0.2) / 3, 9), 3)


def test_suite_reports_per_vendor_and_leave_one_vendor_out(result) -> None:
    kinds = {(h.kind, h.group): h for h in result.holdout}
    assert set(kinds) == {(k, v) for k in ("per-vendor", "leave-one-vendor-out") for v in ("nvidia", "amd")}
    assert kinds[("per-vendor", "nvidia")].mean_abs_error == pytest.approx(mean(_by_vendor(result, "nvidia")))
    assert kinds[("leave-one-vendor-out", "nvidia")].mean_abs_error == pytest.approx(mean(_by_vendor(result, "amd")))
    assert [h["kind"] for h in result.to_json()["holdout"]].count("leave-one-vendor-out") == 2


def test_sampled_commands_reproduce_the_prediction(result, run_json) -> None:
    entries = result.entries
    for entry in (entries[0], entries[len(entries) // 2], entries[-1]):
        assert entry.command and entry.command_output == "step_time_s"
        assert run_json(entry.command)["step_time_s"] == entry.predicted, entry.id


def test_lora_rows_train_rank_16_adapters_and_say_so_in_their_command(result) -> None:
    """Every Llama 2 70B LoRA row runs ``train --lora-rank 16`` (NeMo's adapter_dim 16 on attention);
    the pretraining rows train every weight."""
    benchmarks = {str(r["id"]): r["benchmark"] for r in suite.rows()}
    for entry in result.entries:
        lora = benchmarks[entry.id] == "llama2_70b_lora"
        assert ("--lora-rank 16" in str(entry.command)) == lora, entry.id
        assert suite.row_options(next(r for r in suite.rows() if r["id"] == entry.id)).lora_rank == (16 if lora else 0)


def test_rows_the_memory_model_cannot_fit_say_so(result) -> None:
    """Llama 2 70B LoRA on 8 GPUs without model parallelism ran, but fabricsim's memory model (16-bit
    weights although the runs keep FP8 parameters, 16-bit activation-function inputs although
    FP8_ACTIVATION stores them in FP8) puts it over the HBM: the row's detail says so."""
    rows = {e.id: e for e in result.entries}
    assert "does not fit" in rows["v5.0-amd-lora-mi300x-8"].detail
    assert "does not fit" not in rows["v5.1-amd-8b-mi355x-8"].detail


def test_the_405b_rows_run_the_mlperf_model_file() -> None:
    """MLPerf's Llama 3.1 405B uses the Mixtral 8x22B tokenizer (vocabulary 32768, not 128256)."""
    row = next(r for r in suite.rows() if r["benchmark"] == "llama31_405b")
    model = catalog.load_model(suite.row_model(row))
    assert (model.vocab_size, model.num_hidden_layers, model.hidden_size) == (32768, 126, 16384)


def test_done_when_nvidia_within_15_percent(result) -> None:
    """Issue 25: mean |error| <= 15% over the NVIDIA rows (12.2% over 37 rows at the time of writing;
    the largest misses are the 512-GPU Llama 3.1 8B rows, -42% / -39%: 89 / 85 ms steps fabricsim puts at
    52 / 52 ms, and LoRA NVFP4 on 8 GB200 -39%, whose layout the model says needs 208 of 192 GB)."""
    assert mean(_by_vendor(result, "nvidia")) <= 0.15


def test_done_when_other_vendors_within_20_percent(result) -> None:
    """Issue 25: mean |error| <= 20% over the rest (the AMD rows: no Google or Intel row is predicted).
    13.6% over 6 rows on the AMD kernel figures (kernel-efficiency.md V1-V7): LoRA on MI300X -22.4% / -18.9%,
    MI325X -17.4% / -14.3%, MI355X -5.8%, Llama 3.1 8B MI355X -2.5% (32.7% on the generation defaults)."""
    assert mean(_by_vendor(result, "amd")) <= 0.20
