"""`fabricsim validate serving` (issue 24, item 5): MLPerf Inference v4.1 Llama 2 70B Server and Offline
results of NVIDIA's DGX H100 and H200 submissions, reproduced with the serving simulator, each row with its
source, the scenario's constraints and its layout, out-of-sample.

The full suite takes ~15 s of CPU (two Server bisections of 12 runs of 20,000 requests); these tests run
single rows (an Offline row, one Server row) and the suite's data file. The README's accuracy row is
checked against the full suite by tests/validation/test_readme_accuracy.py.
"""

import json

import pytest

from fabricsim import catalog
from fabricsim.cli.app import main
from fabricsim.validation import SUITES
from fabricsim.validation import serving as suite
from fabricsim.validation.base import load_entries

ROWS = {row["id"]: row for row in load_entries(suite.DATA_FILE)}
OFFLINE = "mlperf-v4.1-llama2-70b-offline-h200x8"
SERVER = "mlperf-v4.1-llama2-70b-server-h100x8"


@pytest.fixture(scope="module")
def server_entry():
    return suite._entry(ROWS[SERVER], catalog)


def test_the_suite_is_registered_and_every_row_has_a_source_constraints_and_a_layout() -> None:
    assert SUITES["serving"] == "serving:run"
    assert suite.CALIBRATION.startswith("out-of-sample")
    assert len(ROWS) == len(load_entries(suite.DATA_FILE)) >= 4
    for row in ROWS.values():
        assert "https://github.com/mlcommons/inference_results_v4.1/" in row["source"], row["id"]
        assert str(row["value"]) in row["source"] or f"{row['value']:.2f}" in row["source"], row["id"]
        for key in ("submitter", "system", "accelerators", "software", "scenario", "assumed", "samples_per_s"):
            assert str(row[key]).strip(), (row["id"], key)
        assert row["scenario"] in ("Offline", "Server")
        assert set(row["layout"]) == {"tensor_parallel", "replicas", "max_batch", "kv_free_fraction", "dtype",
                                      "kv_dtype"}
        assert row["layout"]["tensor_parallel"] * row["layout"]["replicas"] == row["accelerators"]
        if row["scenario"] == "Server":
            assert "TTFT P99 <= 2 s" in row["metric"] and "TPOT P99 <= 200 ms" in row["metric"]


def test_the_server_constraints_are_mlperfs_llama2_70b_limits() -> None:
    assert (suite.TTFT_P99_S, suite.TPOT_P99_S) == (2.0, 0.2)


def test_the_mean_output_is_the_rows_own_tokens_over_samples() -> None:
    setup = suite._setup(ROWS[OFFLINE], catalog)
    assert setup.output_len == round(31302.7 / 107.477) == 291
    assert setup.input_len == 684 and setup.gpus == 8


def test_an_offline_row_is_predicted_with_its_error_and_a_command_note() -> None:
    entry = suite._entry(ROWS[OFFLINE], catalog)
    assert entry.measured == 31302.7 and entry.predicted > 0
    assert entry.error == (entry.predicted - entry.measured) / entry.measured
    assert entry.command is None and "--arrival-rate must be finite" in entry.command_note
    assert entry.source == ROWS[OFFLINE]["source"]


def test_the_server_rate_meets_the_constraints_and_a_higher_rate_does_not(server_entry) -> None:
    setup = suite._setup(ROWS[SERVER], catalog)
    rate, summary = suite.server_rate(setup)
    assert suite.meets_server_constraints(summary)
    assert summary.ttft.p99 <= 2.0 and summary.tpot.p99 <= 0.2 and summary.completed == summary.requests
    assert not suite.meets_server_constraints(suite._run(setup, 1.5 * rate, suite.SERVER_REQUESTS))
    assert server_entry.predicted == pytest.approx(summary.output_tokens_per_s, rel=1e-12)


def test_the_server_rows_command_reproduces_its_prediction(server_entry, run_json) -> None:
    assert server_entry.command_output == "output_tokens_per_s"
    out = run_json(server_entry.command)
    assert out["output_tokens_per_s"] == pytest.approx(server_entry.predicted, rel=1e-9)
    assert out["ttft_s"]["p99"] <= 2.0 and out["tpot_s"]["p99"] <= 0.2


def test_validate_serving_json_has_the_rows_errors_and_sources(monkeypatch, capsys) -> None:
    """The CLI path, on the data file cut to its Offline rows (the Server bisections run above)."""
    offline = [row for row in ROWS.values() if row["scenario"] == "Offline"]
    monkeypatch.setattr(suite, "load_entries", lambda *_: offline)
    assert main(["validate", "serving", "--json"]) == 0
    (only,) = json.loads(capsys.readouterr().out)["suites"]
    assert only["name"] == "serving" and len(only["entries"]) == len(offline)
    assert only["calibration"].startswith("out-of-sample")
    for entry in only["entries"]:
        assert "mlperf_log_summary.txt" in entry["source"]
        assert entry["error"] == pytest.approx((entry["predicted"] - entry["measured"]) / entry["measured"])
    assert only["mean_abs_error"] == pytest.approx(sum(abs(e["error"]) for e in only["entries"]) / len(offline))
