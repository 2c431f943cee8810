"""Simulated serving requests per wall-clock second of ``fabricsim serve`` (targets: 100,000 requests
in under 30 s at simulate fidelity; 10,000 requests on 64 GPUs in under 60 s with the fabric in the
loop, ``FLOW_CASES``). Plain script, not run in CI: ``python benchmarks/bench_serve.py``;
``python benchmarks/bench_serve.py --million`` times issue 24's case instead: 1,000,000 requests of
Llama 3 8B on 2 replicas (goal: under 30 s on one core)."""

from __future__ import annotations

import sys
import time

from fabricsim import api

CASES = (
    ("llama3-70b", "dgx-h100", 8, {"tp": 8, "dtype": "fp8"}, 20.0),
    ("llama3-8b", "dgx-h100", 8, {"tp": 1, "dtype": "fp8"}, 300.0),
    ("kimi-k2", "dgx-h200", 16, {"tp": 1, "ep": 16, "dtype": "fp8"}, 40.0),
)
REQUESTS = 100_000
FLOW_REQUESTS = 10_000
FLOW_CASES = (  # (model, system, gpus, options, rate): the steps' crossing collectives / KV hand-offs on the fabric
    ("llama3-70b", "dgx-h100", 64, {"tp": 8, "disaggregate": "4:4"}, 20.0),
    ("deepseek-v3", "dgx-h100", 64, {"tp": 1, "ep": 64, "dtype": "fp8",
                                     "topology": "leaf-spine:leaves=4,spines=4,hosts_per_leaf=16,oversubscription=4"},
     20.0),
)
MILLION = (("llama3-8b", "dgx-h100", 2, {"tp": 1}, 30.0),)


def main() -> None:
    cases, requests = (MILLION, 1_000_000) if "--million" in sys.argv else (CASES, REQUESTS)
    for model, system, gpus, layout, rate in cases:
        start = time.perf_counter()
        result = api.serve(model, system, gpus, arrival_rate=rate, requests=requests, input_len="uniform:100,2000",
                           output_len="lognormal:256,0.5", seed=1, **layout)
        wall = time.perf_counter() - start
        data = result.to_json()
        print(f"{model} on {gpus}x{system} at {rate:g} req/s: {requests} requests, {data['steps']} steps in "
              f"{wall:.1f} s wall = {requests / wall:,.0f} simulated requests/s "
              f"(P99 TTFT {data['ttft_s']['p99']:.3f} s, {data['output_tokens_per_s']:,.0f} output tok/s)")
    for model, system, gpus, options, rate in () if "--million" in sys.argv else FLOW_CASES:
        start = time.perf_counter()
        result = api.serve(model, system, gpus, arrival_rate=rate, requests=FLOW_REQUESTS, input_len="uniform:100,4000",
                           output_len="lognormal:256,0.5", seed=1, fidelity="flow", **options)
        wall = time.perf_counter() - start
        data = result.to_json()
        print(f"flow: {model} on {gpus}x{system} {options}: {FLOW_REQUESTS} requests, {data['steps']} steps in "
              f"{wall:.1f} s wall (target < 60 s; P99 TTFT {data['ttft_s']['p99']:.3f} s, "
              f"P99 network stall {data['network_stall_s']['p99'] * 1e3:.2f} ms)")


if __name__ == "__main__":
    main()
