"""The fabric in the loop at scale (issue 23): one training step with every collective on the fabric.

* DeepSeek-V3 on 8,192 H100 (dgx-h100's rail-optimized fabric), tp4 pp8 vpp4 ep64 expert-tp 1, one
  step at flow fidelity: target < 60 s.
* GPT-3 175B on 1,024 H100, tp8 pp8, one step at packet fidelity: target < 10 min.
* GPT-3 175B on 1,024 H100 at flow fidelity on a 4:1 leaf-spine, packed vs spread (what placement does).

Wall and CPU time per run, the step time next to the analytic one, and how many mixes the fixed point
timed (network runs). Plain script, not run in CI: ``python benchmarks/bench_fabric_loop.py [--skip-packet]``.
The analytic estimates' speed is ``benchmarks/bench_training.py`` (target >= 50,000/s, unchanged).
"""

from __future__ import annotations

import sys
import time

from fabricsim import api

GPT3 = ("gpt3-175b", "dgx-h100", 1024, 512, 2048)
GPT3_LAYOUT = {"tp": 8, "pp": 8}
DSV3 = ("deepseek-v3", "dgx-h100", 8192, 8192, 4096)
DSV3_LAYOUT = {"tp": 4, "pp": 8, "vpp": 4, "ep": 64, "expert_tp": 1}
LEAF_SPINE_4_1 = "leaf-spine:leaves=32,spines=8,hosts_per_leaf=32,oversubscription=4"


def _run(label: str, target_s: float | None, args: tuple, **kwargs) -> None:
    start, cpu_start = time.perf_counter(), time.process_time()
    out = api.simulate_train(*args, **kwargs).to_json()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    verdict = "" if target_s is None else f" (target < {target_s:.0f} s: {'met' if wall < target_s else 'MISSED'})"
    net = out["network"]
    print(
        f"  {label:44s} wall {wall:7.2f} s, CPU {cpu:7.2f} s{verdict}\n"
        f"  {'':44s} step {out['step_time_s']:.3f} s (analytic {out['analytic_step_time_s']:.3f} s),"
        f" {net['mixes_timed']} mixes, {net['network_runs']} network runs, {net['rounds']} rounds,"
        f" exposed dp {net['exposed_s'].get('dp-all-reduce', net['exposed_s'].get('dp-reduce-scatter', 0.0)):.3f} s"
    )


def main() -> None:
    print("DeepSeek-V3, 8,192 H100, tp4 pp8 vpp4 ep64 etp1, global batch 8192 x 4096")
    _run("flow, dgx-h100 rail-optimized", 60.0, DSV3, fidelity="flow", **DSV3_LAYOUT)
    print("GPT-3 175B, 1,024 H100, tp8 pp8, global batch 512 x 2048")
    for placement in ("packed", "spread"):
        _run(f"flow, 4:1 leaf-spine, {placement}", None, GPT3, fidelity="flow", topology=LEAF_SPINE_4_1,
             placement=placement, **GPT3_LAYOUT)
    if "--skip-packet" not in sys.argv:
        _run("packet, dgx-h100 rail-optimized", 600.0, GPT3, fidelity="packet", **GPT3_LAYOUT)


if __name__ == "__main__":
    main()
