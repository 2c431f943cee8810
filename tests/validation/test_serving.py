"""`fabricsim validate serving` (issue 24, item 5): MLPerf Inference Llama 2 70B and Llama 3.1 405B Server and
Offline results of NVIDIA's submissions (v4.1 DGX H100/H200, v5.1 DGX B200 and GB200), reproduced with the
serving simulator on each dataset's per-request lengths, each row with its source, the scenario's constraints
and its layout, out-of-sample.

The full suite takes ~1 minute of CPU (a Server bisection of 9 runs of 10,000 requests per Server row); these
tests run single rows (an Offline row, one Server row) and the data files. The README's accuracy row is
checked against the full suite by tests/validation/test_readme_accuracy.py.
"""

import json
import math

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.cli.app import main
from fabricsim.validation import SUITES
from fabricsim.validation import serving as suite
from fabricsim.validation.base import load_entries

ROWS = {row["id"]: row for row in load_entries(suite.DATA_FILE)}
OFFLINE = "mlperf-v4.1-llama2-70b-offline-h200x8"
SERVER = "mlperf-v4.1-llama2-70b-server-h200x8"
LAYOUT_KEYS = {"tensor_parallel", "replicas", "max_batch", "max_num_tokens", "kv_free_fraction", "admission",
               "cuda_graphs", "dtype", "kv_dtype"}


@pytest.fixture(scope="module")
def server_setup():
    return suite._setup(ROWS[SERVER], catalog)


def test_the_suite_is_registered_and_every_row_has_a_source_constraints_and_a_layout() -> None:
    assert SUITES["serving"] == "serving:run"
    assert suite.CALIBRATION.startswith("out-of-sample")
    assert len(ROWS) == len(load_entries(suite.DATA_FILE)) >= 12
    for row in ROWS.values():
        assert "https://github.com/mlcommons/inference_results_v" in row["source"], row["id"]
        assert "mlperf_log_summary.txt" in row["source"], row["id"]
        assert str(row["value"]) in row["source"] or f"{row['value']:.2f}" in row["source"], row["id"]
        for key in ("submitter", "vendor", "system", "accelerators", "software", "scenario", "assumed",
                    "samples_per_s"):
            assert str(row[key]).strip(), (row["id"], key)
        assert row["scenario"] in ("Offline", "Server") and row["benchmark"] in suite.benchmarks()
        layout = row["layout"]
        assert LAYOUT_KEYS <= set(layout) <= LAYOUT_KEYS | {"pipeline_parallel", "policy"}, row["id"]
        gpus = layout["tensor_parallel"] * layout.get("pipeline_parallel", 1) * layout["replicas"]
        assert gpus == row["accelerators"], row["id"]
        if row["scenario"] == "Server":
            bench = suite.benchmarks()[row["benchmark"]]
            limits = f"TTFT P99 <= {bench['ttft_p99_s']:g} s, TPOT P99 <= {bench['tpot_p99_s'] * 1e3:g} ms"
            assert limits in row["metric"], row["id"]


def test_the_benchmarks_server_limits_are_mlperfs() -> None:
    """loadgen/mlperf.conf: llama2-70b and mixtral-8x7b 2000/200 ms, llama3_1-405b 6000/175 ms."""
    limits = {name: (b["ttft_p99_s"], b["tpot_p99_s"]) for name, b in suite.benchmarks().items()}
    assert limits == {"llama2-70b": (2.0, 0.2), "llama3.1-405b": (6.0, 0.175), "mixtral-8x7b": (2.0, 0.2)}


def test_the_dataset_lengths_are_the_shipped_per_request_files_with_their_stated_statistics() -> None:
    """Every dataset sample, in order; the stated means are the files' (the llama2-70b mean input is 222.3
    tokens, not the 684 this suite used before: 684.68 is the 405B benchmark's tokens per sample, which the
    405B file's reference outputs reproduce)."""
    for name, bench in suite.benchmarks().items():
        inputs, reference = suite.dataset_lengths(name)
        assert len(inputs) == len(reference) == bench["samples"], name
        assert inputs.mean() == pytest.approx(bench["mean_input_tokens"], abs=0.05), name
        assert np.median(inputs) == bench["median_input_tokens"], name
        assert reference.mean() == pytest.approx(bench["mean_reference_output_tokens"], abs=0.01), name
        assert inputs.min() >= 1 and reference.min() >= 1
    assert suite.dataset_lengths("llama3.1-405b")[1].mean() == pytest.approx(684.68, abs=0.005)


def test_each_requests_output_is_its_reference_scaled_to_the_rows_own_mean() -> None:
    setup = suite._setup(ROWS[OFFLINE], catalog)
    inputs, reference = suite.dataset_lengths("llama2-70b")
    assert np.array_equal(setup.input_len, inputs)
    assert setup.mean_output == pytest.approx(31302.7 / 107.477, rel=0.01)  # 291.2 generated tokens per sample
    assert setup.output_len.max() <= 1024 and setup.output_len.min() >= 1
    longer = reference > np.median(reference)
    assert setup.output_len[longer].mean() > setup.output_len[~longer].mean()  # the dataset's shape is kept
    assert np.array_equal(suite.scaled_outputs(np.array([100, 300]), 400.0, 1024), [200, 600])
    assert np.array_equal(suite.scaled_outputs(np.array([100, 900]), 1000.0, 1024), [200, 1024])


def test_the_stream_draws_whole_shuffled_passes_of_the_dataset_deterministically(server_setup) -> None:
    count = len(server_setup.input_len) + 5
    first, again = suite._stream(server_setup, 10.0, count), suite._stream(server_setup, 10.0, count)
    assert np.array_equal(first.input_len, again.input_len) and np.array_equal(first.arrival_s, again.arrival_s)
    head = first.input_len[:len(server_setup.input_len)]
    assert np.array_equal(np.sort(head), np.sort(server_setup.input_len))  # one whole pass, shuffled
    assert np.all(np.diff(first.arrival_s) >= 0)
    offline = suite._stream(server_setup, math.inf, 10)
    assert np.all(offline.arrival_s == 0)


def test_an_offline_row_is_predicted_with_its_error_and_a_command_note() -> None:
    entry = suite.row_entry(ROWS[OFFLINE], catalog)
    assert entry.measured == 31302.7 and entry.predicted > 0
    assert entry.error == (entry.predicted - entry.measured) / entry.measured
    assert entry.command is None and "--request-trace" in entry.command_note
    assert entry.source == ROWS[OFFLINE]["source"]


def test_the_server_rate_meets_the_constraints_in_steady_state_and_is_bounded_by_the_full_replicas(
        server_setup) -> None:
    rate, summary = suite.server_rate(server_setup)
    assert suite.meets_server_constraints(summary, server_setup.limits)
    assert summary.requests == suite.SERVER_REQUESTS - suite.SERVER_REQUESTS // 2  # the second half's requests
    offline = suite._run(server_setup, math.inf, suite.offline_requests(server_setup))
    assert 0 < rate <= offline.output_tokens_per_s / server_setup.mean_output
    assert not suite.meets_server_constraints(suite.steady_state_run(server_setup, 2.0 * rate, suite.SERVER_REQUESTS),
                                              server_setup.limits)
    assert suite.server_tokens_per_s(server_setup, rate) == pytest.approx(rate * server_setup.mean_output, rel=0.02)


def test_offline_runs_hold_eight_waves_of_what_the_replicas_hold(server_setup) -> None:
    held = suite.offline_requests(server_setup) / suite.OFFLINE_WAVES / server_setup.scenario.layout.replicas
    assert 1 <= held <= server_setup.scenario.max_batch


def test_validate_serving_json_has_the_rows_errors_and_sources(monkeypatch, capsys) -> None:
    """The CLI path, on the data file cut to two Offline rows (the Server bisection runs above)."""
    offline = [row for row in ROWS.values() if row["scenario"] == "Offline"][:2]
    monkeypatch.setattr(suite, "load_entries", lambda *_: offline)
    assert main(["validate", "serving", "--json"]) == 0
    (only,) = json.loads(capsys.readouterr().out)["suites"]
    assert only["name"] == "serving" and len(only["entries"]) == len(offline)
    assert only["calibration"].startswith("out-of-sample")
    for entry in only["entries"]:
        assert "mlperf_log_summary.txt" in entry["source"]
        assert entry["error"] == pytest.approx((entry["predicted"] - entry["measured"]) / entry["measured"])
    assert only["mean_abs_error"] == pytest.approx(sum(abs(e["error"]) for e in only["entries"]) / len(offline))


def test_done_when_validate_serving_within_15_percent() -> None:
    """Issue 24: `validate serving` mean |error| <= 15% (6.6% over 14 rows; worst GB300 405B Server +33.1%)."""
    from fabricsim import catalog
    from fabricsim.validation import run_suite

    result = run_suite("serving", catalog)
    assert result.mean_abs_error <= 0.15
    assert len(result.entries) == 14
