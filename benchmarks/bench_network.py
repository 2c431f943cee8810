"""Network-simulator speed at scale (not run in CI): ``python benchmarks/bench_network.py``.

1. Ring all-reduce of 1 GiB across 1,024 GPUs of dgx-h100 (NVSwitch nodes + rail-optimized fat-tree
   of 64-port switches). The 2 (n - 1) ring steps are identical flow sets (same src, dst, bytes),
   so one step is simulated and the rest folded (exact: see collectives.schedules.run_schedule).
   Once as one ring, once as NCCL-like channel rings (8 channels, ranks_per_node=8).
2. A random permutation on an 8,192-host k=32 fat-tree with per-flow ECMP (no folding).
3. All-to-all across 512 hosts (261,632 flows) on a k=16 fat-tree: with spraying, aggregated exactly
   by leaf-pair symmetry (network.symmetry: 4,096 classes); with ECMP, as the pairwise schedule
   (511 shift-permutation phases of 512 flows each, every phase simulated).
4. Failures: the same 8,192-host permutation, sprayed, healthy and with 1% of the fabric cables
   failed (seeded), routed over the remaining equal-cost paths.
Prints wall times and flows solved per second (flows in the problem / wall time).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from fabricsim import catalog
from fabricsim.collectives.ops import Algorithm, CollectiveOp
from fabricsim.collectives.schedules import ScheduleRequest, build_schedule, run_schedule
from fabricsim.network.flow import FlowNetwork
from fabricsim.network.patterns import Pattern, host_throughput_fraction, pattern_flows
from fabricsim.network.symmetry import simulate_symmetric
from fabricsim.topology.builders import LinkParams, fat_tree
from fabricsim.topology.graph import fabric_cables, fail_cables
from fabricsim.topology.routing import Routing, route_table
from fabricsim.topology.system import build_system_topology

NDR = LinkParams(50e9, 0.33e-6)
GIB = 2**30


def _report(name: str, wall_s: float, flows: int, detail: str) -> None:
    print(f"{name:<44} {wall_s:7.2f} s  {flows / wall_s:>12,.0f} flows/s  {detail}")


def ring_1024(routing: Routing, channels: int = 1) -> None:
    start = time.perf_counter()
    table = route_table(build_system_topology(catalog.load_system("dgx-h100"), 1024))
    steps = build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.RING, 1024, GIB, channels))
    timed = run_schedule(steps, FlowNetwork(table, routing, 0), np.arange(1024))
    wall = time.perf_counter() - start
    flows = sum(step.src.size for step in steps)
    detail = (
        f"time {timed.time_s * 1e3:.1f} ms, {timed.simulated_steps} simulated + {timed.folded_steps} folded steps"
        f" (flows/s counts folded flows; {steps[0].src.size} flows simulated)"
    )
    rings = f", {channels} channels" if channels > 1 else ""
    _report(f"ring all-reduce 1 GiB, 1024 GPUs{rings}, {routing.value}", wall, flows, detail)


def permutation_8192() -> None:
    start = time.perf_counter()
    topo = fat_tree(32, NDR)
    table = route_table(topo)
    flows = pattern_flows(Pattern.PERMUTATION, topo.hosts, 64 * 2**20, 0)
    result = FlowNetwork(table, Routing.ECMP, 0).run(flows)
    wall = time.perf_counter() - start
    share = host_throughput_fraction(flows, result.finish_s, topo.line_rate_Bps).mean()
    detail = f"mean throughput {share:.3f} of line rate, {result.events} events"
    _report("permutation, 8192-host fat-tree k=32, ecmp", wall, flows.count, detail)


def permutation_8192_failures(fraction: float) -> None:
    start = time.perf_counter()
    topo = fat_tree(32, NDR)
    count = round(fraction * fabric_cables(topo).shape[0])
    failed, _ = fail_cables(topo, count, 0)
    flows = pattern_flows(Pattern.PERMUTATION, topo.hosts, 64 * 2**20, 0)
    result = FlowNetwork(route_table(failed), Routing.SPRAY, 0).run(flows)
    wall = time.perf_counter() - start
    share = host_throughput_fraction(flows, result.finish_s, topo.line_rate_Bps)
    detail = f"{count} cables failed: mean {share.mean():.3f}, min {share.min():.3f} of line rate"
    _report(f"permutation, 8192-host k=32, spray, {fraction:.0%} failed", wall, flows.count, detail)


def all_to_all_512_spray() -> None:
    start = time.perf_counter()
    table = route_table(fat_tree(16, NDR, hosts=512))
    flows = pattern_flows(Pattern.ALL_TO_ALL, 512, 2**20, 0)
    result, classes = simulate_symmetric(table, flows)
    wall = time.perf_counter() - start
    share = host_throughput_fraction(flows, result.finish_s, NDR.capacity_Bps).mean()
    detail = f"{classes.members.size} leaf-pair classes, per-host {share:.3f} of line rate"
    _report("all-to-all 512 hosts, spray (symmetry)", wall, flows.count, detail)


def all_to_all_512_pairwise_ecmp() -> None:
    start = time.perf_counter()
    table = route_table(fat_tree(16, NDR, hosts=512))
    steps = build_schedule(ScheduleRequest(CollectiveOp.ALL_TO_ALL, Algorithm.RING, 512, 512 * 2**20))
    timed = run_schedule(steps, FlowNetwork(table, Routing.ECMP, 0), np.arange(512))
    wall = time.perf_counter() - start
    per_host = 511 * 2**20 / timed.time_s / NDR.capacity_Bps
    detail = f"{timed.simulated_steps} phases simulated, per-host {per_host:.3f} of line rate"
    _report("all-to-all 512 hosts, ecmp (pairwise phases)", wall, 511 * 512, detail)


def main() -> int:
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    ring_1024(Routing.ECMP)
    ring_1024(Routing.SPRAY)
    ring_1024(Routing.ECMP, channels=8)
    ring_1024(Routing.SPRAY, channels=8)
    permutation_8192()
    permutation_8192_failures(0.0)
    permutation_8192_failures(0.01)
    all_to_all_512_spray()
    all_to_all_512_pairwise_ecmp()
    return 0


if __name__ == "__main__":
    sys.exit(main())
