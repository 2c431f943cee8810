"""Serving suite: MLPerf Inference Llama 2 70B Server and Offline results, reproduced with ``serve`` (layer L8).

Rows come from the shipped ``data/serving-mlperf.yaml``: NVIDIA's MLPerf Inference v4.1 Datacenter Closed
submissions on DGX H100 and H200 (LoadGen summaries in the official results repository, with each
submission's layout from its configs). Each row is simulated as the submission ran it, with the same
request-level simulator as ``fabricsim serve`` (continuous batching, chunked prefill, FP8 weights and KV
cache, TensorRT-LLM's GUARANTEED_NO_EVICT admission, the submission's tensor parallelism, replicas,
``gpu_batch_size`` and ``kvcache_free_gpu_mem_frac``):

* **Offline**: every request queued at t = 0 (``OFFLINE_WAVES`` x batch x replicas requests, so that the
  ramp-down tail is a small part of the run); the prediction is output tokens / (last finish - first
  arrival), as LoadGen's Offline "Tokens per second" over its whole query.
* **Server**: Poisson arrivals (seed 0, ``SERVER_REQUESTS`` requests); the arrival rate is bisected for
  the highest rate whose TTFT P99 <= 2 s and TPOT P99 <= 200 ms (MLPerf's Server constraints for
  llama2-70b) with every request served; the prediction is ``serve``'s output tokens/s at that rate,
  as LoadGen's "Completed tokens per second" at the submitted target QPS. fabricsim's TPOT P99 is over
  requests (each request's mean time per output token); LoadGen's is over tokens: a stated difference.

Lengths: every request has the dataset's mean input (684 tokens, unverified: see the data file) and the
row's own mean output (its tokens/s over its samples/s); the joint length distribution of the 24,576
OpenOrca requests is not available here. Nothing is fitted to these rows.

Result (README accuracy table): fabricsim under-predicts every row, by 42-45% (mean |error| 43.1%). Two
causes, both measured here rather than fitted: (1) at the mean lengths the simulated KV cache holds fewer
requests than the submissions kept in flight (H100 Server, by Little's law: 74.42 req/s x 44.95 s mean
latency / 4 replicas = 836 requests per TP2 replica, ~690k tokens at the mean lengths, where fabricsim's
90% of 2 x 80 GB less FP8 weights holds 456k); (2) each simulated step carries ~2.35 prefill tokens per
output token (684 / 291), and at that ratio the measured H200 Offline rate needs 13.4 requests/s x
975 tokens x 2 x 69e9 FLOP = 1.81 PFLOP/s per GPU, 91% of the H200's dense FP8 peak (1979 TFLOP/s): the
stated 684-token mean input (unverified) is likely too high, or the joint length distribution matters.
A verified per-request length trace of the dataset is the first thing to add before reading these
errors as step-time errors.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from fabricsim.engine.inference.scheduler import ServingSummary
from fabricsim.engine.inference.serving import ServeScenario, simulate_serving
from fabricsim.validation.base import SpecSource, SuiteResult, ValidationEntry, data_path, load_entries
from fabricsim.validation.commands import model_file
from fabricsim.workload.inference_layout import InferenceLayout
from fabricsim.workload.requests import LengthDist, RequestStream, clip_to_context, poisson_stream

DATA_FILE = "serving-mlperf.yaml"
MODEL = "llama2-70b"  # data/models/llama2-70b.yaml (Llama 2 70B is not a catalog model)
TTFT_P99_S = 2.0  # MLPerf llama2-70b Server: ttft_latency 2000000000 ns (each row's LoadGen summary)
TPOT_P99_S = 0.2  # MLPerf llama2-70b Server: tpot_latency 200000000 ns (same)
TOKEN_BUDGET = 8192  # max_num_tokens is not in the stored NVIDIA configs: serve's default
SEED = 0
OFFLINE_WAVES = 8  # Offline requests = 8 x max_batch x replicas: the final partial batch is ~1/8 of the run
SERVER_REQUESTS = 20000  # Server: ~4-5 minutes of arrivals at the submitted rates, ~6x the mean latency
BISECTION_STEPS = 12  # resolution: the upper bracket / 4096
UPPER_BRACKET = 1.5  # the Server bisection starts at 1.5x the Offline-predicted request rate


@dataclass(frozen=True, slots=True)
class _Setup:
    scenario: ServeScenario
    gpus: int
    input_len: int
    output_len: int


def _dataset() -> dict[str, Any]:
    with data_path(DATA_FILE).open(encoding="utf-8") as handle:
        return dict(yaml.safe_load(handle)["dataset"])


def _setup(row: dict[str, Any], source: SpecSource) -> _Setup:
    layout = row["layout"]
    model = source.load_model(model_file(MODEL))
    inference = InferenceLayout(tensor_parallel=int(layout["tensor_parallel"]), weight_dtype=layout["dtype"],
                                kv_dtype=layout["kv_dtype"], replicas=int(layout["replicas"]))
    scenario = ServeScenario(model, source.load_system(row["catalog_system"]), inference, TOKEN_BUDGET,
                             int(layout["max_batch"]), reserve_full=True,
                             kv_free_fraction=float(layout["kv_free_fraction"]))
    mean_input = int(_dataset()["mean_input_tokens"])
    mean_output = round(float(row["value"]) / float(row["samples_per_s"]))
    return _Setup(scenario, int(row["accelerators"]), mean_input, mean_output)


def _stream(setup: _Setup, rate_per_s: float, count: int) -> RequestStream:
    """The stream ``fabricsim serve --input-len I --output-len O --arrival-rate R --seed 0`` draws."""
    context = setup.scenario.model.max_position_embeddings
    lengths = (LengthDist("fixed", setup.input_len), LengthDist("fixed", setup.output_len))
    stream = poisson_stream(rate_per_s, count, lengths, (context - 1, context - 1), SEED)
    return clip_to_context(stream, context)


def _run(setup: _Setup, rate_per_s: float, count: int) -> ServingSummary:
    return simulate_serving(setup.scenario, _stream(setup, rate_per_s, count), (TTFT_P99_S, TPOT_P99_S))


def offline_requests(setup: _Setup) -> int:
    return OFFLINE_WAVES * setup.scenario.max_batch * setup.scenario.layout.replicas


def meets_server_constraints(summary: ServingSummary) -> bool:
    """Every request served, TTFT P99 <= 2 s and TPOT P99 <= 200 ms."""
    return (summary.completed == summary.requests and summary.ttft.p99 <= TTFT_P99_S
            and summary.tpot.p99 <= TPOT_P99_S)


def server_rate(setup: _Setup) -> tuple[float, ServingSummary]:
    """Highest Poisson rate (requests/s) meeting the Server constraints, by bisection from 0 to
    ``UPPER_BRACKET`` x the Offline-predicted request rate; with the run at that rate."""
    offline = _run(setup, math.inf, offline_requests(setup))
    high = UPPER_BRACKET * offline.output_tokens_per_s / setup.output_len
    best: tuple[float, ServingSummary] | None = None
    low = 0.0
    for _ in range(BISECTION_STEPS):
        rate = (low + high) / 2.0
        summary = _run(setup, rate, SERVER_REQUESTS)
        if meets_server_constraints(summary):
            low, best = rate, (rate, summary)
        else:
            high = rate
    if best is None:  # not even the lowest probed rate passes: report that rate's run (fails the row visibly)
        return low, _run(setup, high, SERVER_REQUESTS)
    return best


def serve_command(row: dict[str, Any], setup: _Setup, rate_per_s: float) -> str:
    """The ``fabricsim serve ... --json`` line of a Server row at the bisected rate."""
    layout = row["layout"]
    return shlex.join([
        "fabricsim", "serve", "--model", model_file(MODEL), "--system", row["catalog_system"],
        "--gpus", str(setup.gpus), "--tp", str(layout["tensor_parallel"]), "--dtype", layout["dtype"],
        "--kv-dtype", layout["kv_dtype"], "--admission", "reserve", "--token-budget", str(TOKEN_BUDGET),
        "--max-batch", str(layout["max_batch"]), "--arrival-rate", repr(rate_per_s),
        "--requests", str(SERVER_REQUESTS), "--input-len", str(setup.input_len),
        "--output-len", str(setup.output_len), "--seed", str(SEED), "--slo-ttft", "2s", "--slo-tpot", "200ms",
        "--json",
    ])


def _offline_note(row: dict[str, Any], setup: _Setup) -> str:
    count = offline_requests(setup)
    return ("no exact CLI command: serve has no offline arrival (--arrival-rate must be finite); the row is "
            f"{count} requests of {setup.input_len} input and {setup.output_len} output tokens all at t = 0 "
            f"(a --request-trace of {count} rows '0,{setup.input_len},{setup.output_len}' with "
            f"--tp {row['layout']['tensor_parallel']} --dtype fp8 --kv-dtype fp8 --admission reserve "
            f"--max-batch {row['layout']['max_batch']} reproduces it); output key output_tokens_per_s")


def _entry(row: dict[str, Any], source: SpecSource) -> ValidationEntry:
    setup = _setup(row, source)
    layout = row["layout"]
    shape = (f"{row['accelerators']}x {row['catalog_system']}, TP{layout['tensor_parallel']} x "
             f"{layout['replicas']} replicas, batch {layout['max_batch']}, FP8, ISL {setup.input_len} "
             f"OSL {setup.output_len}")
    common = {"id": row["id"], "metric": row["metric"], "unit": "output tokens/s", "measured": float(row["value"]),
              "source": row["source"]}
    if row["scenario"] == "Offline":
        summary = _run(setup, math.inf, offline_requests(setup))
        return ValidationEntry(**common, predicted=summary.output_tokens_per_s,
                               detail=f"{shape}; {offline_requests(setup)} requests at t = 0",
                               command_note=_offline_note(row, setup))
    rate, summary = server_rate(setup)
    detail = (f"{shape}; highest rate meeting TTFT P99 <= 2 s, TPOT P99 <= 200 ms: {rate:.2f} req/s "
              f"(measured {row['samples_per_s']}), TTFT P99 {summary.ttft.p99:.3f} s, TPOT P99 "
              f"{summary.tpot.p99 * 1e3:.0f} ms")
    return ValidationEntry(**common, predicted=summary.output_tokens_per_s, detail=detail,
                           command=serve_command(row, setup, rate), command_output="output_tokens_per_s",
                           command_note="fabricsim's TPOT P99 is over requests, LoadGen's over tokens")


CALIBRATION = (
    "out-of-sample: no constant fitted on these rows; H100/H200 compute from kernel benchmarks and "
    "kernel-level sweeps (as the inference suite), each submission's own layout, batch and KV memory fraction; "
    "Server rate found by bisection against MLPerf's TTFT/TPOT P99 limits, not against the measured rate"
)


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """Every row of the shipped file."""
    del holdout  # the rows are out-of-sample for every calibration; nothing to hold out
    return SuiteResult("serving", tuple(_entry(row, source) for row in load_entries(DATA_FILE)),
                       calibration=CALIBRATION)
