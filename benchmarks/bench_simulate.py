"""Wall time to simulate one training iteration of megatron-1t on 3,072 A100s (issue 6).

dgx-a100, TP8 PP64 DP6, global batch 3072, sequence 2048 (Megatron SC'21 Table 1's last row,
full recomputation): once with the analytic collective times (``--fidelity simulate``) and once
with the flow-level network (``--fidelity flow``: topology of 3,072 GPUs, every group of a kind
communicating at once, ECMP). Targets: under 10 s and under 60 s. Plain script, not run in CI:
``python benchmarks/bench_simulate.py``.
"""

from __future__ import annotations

import time

from fabricsim import api

ARGS = ("megatron-1t", "dgx-a100", 3072, 3072, 2048)
LAYOUT = {"tp": 8, "pp": 64, "dp": 6, "recompute": "full"}
TARGETS_S = {"simulate": 10.0, "flow": 60.0}


def main() -> None:
    print("megatron-1t, 3,072 A100 (dgx-a100), TP8 PP64 DP6, global batch 3072, seq 2048")
    for fidelity, target in TARGETS_S.items():
        start, cpu_start = time.perf_counter(), time.process_time()
        result = api.simulate_train(*ARGS, fidelity=fidelity, **LAYOUT)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        out = result.to_json()
        print(
            f"  {fidelity:8s} wall {wall:6.2f} s, CPU {cpu:6.2f} s (target < {target:.0f} s: "
            f"{'met' if wall < target else 'MISSED'})"
            f"  ops {out['simulated_ops']:,}  step {out['step_time_s']:.3f} s"
            f"  (analytic {out['analytic_step_time_s']:.3f} s)  folded {out['folded']}"
        )


if __name__ == "__main__":
    main()
