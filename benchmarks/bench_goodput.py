"""Goodput speed at scale (not run in CI): ``python benchmarks/bench_goodput.py``.

Issue 13's target: ``goodput`` for 1,000 simulated days at 131,072 GPUs in < 10 s (1,000 seeded
Monte-Carlo runs). The system is ``benchmarks/data/h100-xdr-131k.yaml`` (H100 nodes on a 144-port
XDR fat-tree; the catalog's 64-port NDR fabrics stop at 65,536 NICs in three tiers). Llama 3 405B,
tp 8, pp 16, ZeRO-1, full recomputation. Prints the wall time of the whole API call (topology build
and counting, step model, flow-model probe of a rerouted cable, Monte-Carlo) and of each part, the
ratio to the 10 s budget, and the figures.
"""

from __future__ import annotations

import time
from pathlib import Path

from fabricsim import api
from fabricsim.api.goodput import component_counts, rerouted_completion_ratio

SYSTEM = str(Path(__file__).resolve().parent / "data" / "h100-xdr-131k.yaml")
GPUS = 131_072
DAYS = 1_000
BUDGET_S = 10.0
LAYOUT = {"tp": 8, "pp": 16, "zero": 1, "recompute": "full"}


def main() -> None:
    start = time.perf_counter()
    counts = component_counts(SYSTEM, GPUS)
    counted_s = time.perf_counter() - start
    start = time.perf_counter()
    ratio = rerouted_completion_ratio(SYSTEM, GPUS, 1)
    probe_s = time.perf_counter() - start
    component_counts.cache_clear()
    start, cpu_start = time.perf_counter(), time.process_time()
    result = api.goodput("llama3-405b", SYSTEM, GPUS, 16_384, 8192, days=DAYS, runs=1000, seed=1, **LAYOUT)
    total_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    out = result.to_json()
    print(
        f"goodput, {GPUS:,} GPUs, {DAYS:,} days, {out['runs']} runs: {total_s:.2f} s wall, {cpu_s:.2f} s CPU "
        f"({total_s / BUDGET_S:.2f} of the {BUDGET_S:.0f} s budget; wall time grows on a loaded machine)"
    )
    print(f"  parts: topology + counts {counted_s:.2f} s, flow probe {probe_s:.2f} s (ratio {ratio:.3f})")
    print(f"  components {counts}")
    print(f"  interruptions {out['interruptions']}, MTTF {out['mttf_s']:.0f} s")
    print(
        f"  checkpoint {out['checkpoint_bytes'] / 1e12:.2f} TB, blocking {out['checkpoint_time_s']:.2f} s, "
        f"interval {out['checkpoint_interval_s']:.0f} s, restart {out['restart_time_s']:.0f} s"
    )
    print(f"  ETTR {out['ettr']} (expected {out['ettr_expected']:.4f})")


if __name__ == "__main__":
    main()
