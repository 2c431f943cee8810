"""Inference suite: TensorRT-LLM offline max-throughput on H100, dense Llama rows (layer L8).

Each row is simulated as ``trtllm-bench throughput`` ran it (perf-overview.md, v1.0): all requests
queued at t = 0 (the row's request count), FP8 weights and FP8 KV cache (ModelOpt FP8 checkpoints;
assumption: the KV cache was FP8 too), ``kv_cache_free_gpu_mem_fraction`` 0.95 (the doc: "in many
cases"), TensorRT-LLM's default GUARANTEED_NO_EVICT admission (KV reserved for input + output),
continuous batching with chunked, mixed prefill, and trtllm-bench's own heuristic for
``max_batch_size`` (KV-limited requests, capped at 4096) and ``max_num_tokens``
(``batch x (1 + ISL/OSL)``, clamped to [2048, 32768]) from tensorrt_llm/bench/build/tuning.py.
The metric is output tokens / (last finish - first arrival). No constant is specific to a row.
"""

from __future__ import annotations

import math
import shlex

from fabricsim.engine.inference.serving import ServeScenario, replica_kv_tokens, simulate_serving
from fabricsim.engine.inference.step import InferenceLayout
from fabricsim.specs import SystemSpec
from fabricsim.validation.base import (
    HoldoutError,
    SpecSource,
    SuiteResult,
    ValidationEntry,
    load_entries,
    mean_abs_error,
    system_without_format,
    system_without_kernels,
)
from fabricsim.workload.requests import LengthDist, poisson_stream

DATA_FILE = "inference-trtllm-h100.yaml"
MODELS = {"Llama 3.1 8B": "llama3.1-8b", "Llama 3.3 70B": "llama3.3-70b", "Llama 3.1 405B": "llama3-405b",
          "Qwen3-235B-A22B": "qwen3-235b-a22b"}
# Rows the suite cannot predict yet, counted in the result with the reason (not dropped silently).
UNSUPPORTED = {
    "Llama 4 Scout": "Llama 4: chunked (8K) attention on 3 of 4 layers and a shared expert beside top-1 routing; "
                     "not in the catalog",
    "Llama 4 Maverick": "Llama 4: MoE on every other layer (interleave_moe_layer_step 2) and chunked attention; "
                        "the model spec has no interleaved MoE",
}
# Requests per (ISL, OSL) in perf-overview.md ("Number of requests per ISL/OSL" in each row's notes).
REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000,
            (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000}
KV_FREE_FRACTION = 0.95
MAX_BATCH_CAP = 4096
TOKENS_RANGE = (2048, 32768)


def trtllm_bench_settings(kv_tokens: int, isl: int, osl: int) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) as trtllm-bench's ``finetune_setting`` picks them."""
    batch = min(kv_tokens / (isl + osl), MAX_BATCH_CAP)
    tokens = min(batch * (1 + isl / osl), TOKENS_RANGE[1])
    return max(1, math.ceil(batch)), int(max(TOKENS_RANGE[0], math.ceil(tokens)))


CALIBRATION = (
    "out-of-sample: no constant fitted on these rows; H100 compute from kernel benchmarks (cuBLAS "
    "BF16/FP8 GEMMs G20/G22, FlashAttention-3 in a training step A17, HBM B7) and kernel-level sweeps, "
    "compute at the H100's sustained clock (S5)"
)


def predict(entry: dict, source: SpecSource, system: SystemSpec | None = None) -> float:
    """Simulated total output throughput (tokens/s) of one row (on ``system``, default dgx-h100)."""
    workload = entry["workload"]
    isl, osl, tp = int(workload["isl"]), int(workload["osl"]), int(workload["tensor_parallel"])
    model = source.load_model(MODELS[workload["model"]])
    system = system or source.load_system("dgx-h100")
    layout = InferenceLayout(tensor_parallel=tp, weight_dtype="fp8", kv_dtype="fp8")
    probe = ServeScenario(model, system, layout, kv_free_fraction=KV_FREE_FRACTION)
    batch, tokens = trtllm_bench_settings(replica_kv_tokens(probe), isl, osl)
    scenario = ServeScenario(model, system, layout, token_budget=tokens, max_batch=batch, reserve_full=True,
                             kv_free_fraction=KV_FREE_FRACTION)
    stream = poisson_stream(math.inf, REQUESTS[(isl, osl)], (LengthDist("fixed", isl), LengthDist("fixed", osl)),
                            (isl, osl), seed=0)
    return simulate_serving(scenario, stream, (math.inf, math.inf)).output_tokens_per_s


def command_note(entry: dict, source: SpecSource) -> str:
    """Why the row has no exact CLI command, with the nearest ``fabricsim serve`` line."""
    workload = entry["workload"]
    isl, osl, tp = int(workload["isl"]), int(workload["osl"]), int(workload["tensor_parallel"])
    model = source.load_model(MODELS[workload["model"]])
    layout = InferenceLayout(tensor_parallel=tp, weight_dtype="fp8", kv_dtype="fp8")
    probe = ServeScenario(model, source.load_system("dgx-h100"), layout, kv_free_fraction=KV_FREE_FRACTION)
    batch, tokens = trtllm_bench_settings(replica_kv_tokens(probe), isl, osl)
    count = REQUESTS[(isl, osl)]
    nearest = shlex.join([
        "fabricsim", "serve", "--model", MODELS[workload["model"]], "--system", "dgx-h100", "--gpus", str(tp),
        "--tp", str(tp), "--dtype", "fp8", "--kv-dtype", "fp8", "--admission", "reserve", "--token-budget",
        str(tokens), "--max-batch", str(batch), "--request-trace", f"offline-{count}x{isl}-{osl}.csv", "--json",
    ])
    return (
        f"no exact CLI command: serve has no option for the KV memory fraction ({KV_FREE_FRACTION}, trtllm-bench's "
        "kv_cache_free_gpu_mem_fraction; serve uses 0.90) and no offline arrival (--arrival-rate must be finite); "
        f"nearest: {nearest}, the trace holding {count} rows 'arrival_s,input_len,output_len' = '0,{isl},{osl}'; "
        "output key output_tokens_per_s"
    )


def _rows() -> list[dict]:
    return [entry for entry in load_entries(DATA_FILE) if entry["workload"]["model"] in MODELS]


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """Every modelled row (the others are reported as skipped, with the reason); ``holdout`` re-runs
    them without the H100's kernel benchmarks (leave-one-device-out) and without its FP8 GEMM
    benchmark (leave-one-dtype-out)."""
    entries, skipped = [], []
    for entry in load_entries(DATA_FILE):
        workload = entry["workload"]
        if workload["model"] not in MODELS:
            skipped.append((entry["id"], UNSUPPORTED[workload["model"]]))
            continue
        entries.append(ValidationEntry(
            id=entry["id"], metric=entry["metric"], unit="output tokens/s", measured=float(entry["value"]),
            predicted=predict(entry, source), source=entry["source"],
            detail=f"TP{workload['tensor_parallel']} ISL {workload['isl']} OSL {workload['osl']} FP8",
            command_note=command_note(entry, source),
        ))
    held: list[HoldoutError] = []
    if holdout:
        system = source.load_system("dgx-h100")
        for kind, group, variant in (
            ("leave-one-device-out", "dgx-h100", system_without_kernels(system)),
            ("leave-one-dtype-out", "fp8", system_without_format(system, "fp8")),
        ):
            pairs = [(float(entry["value"]), predict(entry, source, variant)) for entry in _rows()]
            held.append(HoldoutError(kind, group, mean_abs_error(pairs), len(pairs)))
    return SuiteResult(
        "inference", tuple(entries), calibration=CALIBRATION, holdout=tuple(held), skipped=tuple(skipped)
    )
