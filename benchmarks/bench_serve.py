"""Simulated serving requests per wall-clock second of ``fabricsim serve`` (target: 100,000 requests
in under 30 s). Plain script, not run in CI: ``python benchmarks/bench_serve.py``;
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


if __name__ == "__main__":
    main()
