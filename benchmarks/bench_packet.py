"""Packet-level simulator speed and behaviour (not run in CI): ``python benchmarks/bench_packet.py``.

1. Compile (or cache load) time of the numba kernel: the first call in a fresh process.
2. The issue's speed target: a 64 -> 1 incast of 1 MB each at 400 Gb/s on one switch, run to
   completion, with no CC, DCQCN and HPCC (PFC on). Target: < 10 s wall.
3. Events per second on one core (target >= 1,000,000): the incast above, a 255 -> 1 incast at
   100 Gb/s with DCQCN, a sprayed 4 MB permutation on a k=8 fat-tree (128 hosts, 6 hops), and the
   issue's case, spraying at k=16 (1,024 hosts, 400 Gb/s, 1 us links, a 1 MB permutation; also
   ``python benchmarks/bench_packet.py spray16`` alone).
   Reported against wall time and against this process's CPU time (the machine may be shared:
   CPU time is what one core delivers).
   Measured 2026-12-02 (issue 26; shared 2-core AMD EPYC host), spray16, alternating runs of the
   kernel before and after the event loop and its per-packet calls lost numba's reference counting
   (loop.py, ``_nrt=False``) and _next_link its scans of all the flow's links (kernel.py);
   5,520,590 events in both, outputs byte-identical. Events per CPU second, six runs each:
   load 1.7-3.1 (_next_link inlined):  before min 0.91 M, median 0.96 M; after min 1.67 M, median 1.92 M;
   load 3.1-3.7 (final, _next_link a call): before min 0.65 M, median 0.71 M; after min 1.25 M, median 1.35 M.
   perf before: 49% of the samples in NRT_incref / NRT_decref (atomic reference counts of the
   arrays passed to the per-packet calls). One full run of this script each (load ~2): 64 -> 1
   incasts 1.27-1.31 M -> 7.4-10.2 M ev/s cpu, 255 -> 1 incast 1.29 M -> 10.4 M, k=8 spray 1.30 M
   -> 5.20 M, k=16 spray 0.90 M -> 1.85 M (k=16 gains least; perf then shows the time spread over
   many loads in the loop, no hot spot: likely cache misses on its larger heap and tables, not
   measured; the heap's pop + push costs 0.12-0.2 us at 10k-150k pending events in isolation).
   First compile (fresh cache, the warm-up run): 89 s CPU before, 108 s after (load 2-3).
4. DCQCN recovery profiles on a 4 -> 1 incast at 100 Gb/s (60 MB each, starts 0.5 ms apart):
   Jain index and utilisation in the 4 ms before the first finish, for the NVIDIA defaults and the
   gentle / aggressive profiles of the reference sweep (reported as they behave).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from fabricsim.network.base import make_flows
from fabricsim.network.packet.model import PacketNetwork
from fabricsim.network.packet.params import CongestionControl, Lossless, PacketParams, RunOptions
from fabricsim.network.patterns import Pattern, host_throughput_fraction, pattern_flows
from fabricsim.topology.builders import LinkParams, fat_tree, nvswitch_domain
from fabricsim.topology.routing import Routing, route_table


def _star(hosts: int, gbps: float, latency_s: float = 330e-9):
    return nvswitch_domain(hosts, LinkParams(gbps * 1e9 / 8, latency_s), reduction=False, name="switch")


def _run(topo, flows, cc: str, params: PacketParams | None = None, routing=Routing.ECMP, sample_dt_s=0.0):
    opts = RunOptions(CongestionControl(cc), Lossless.PFC, topo.line_rate_Bps, sample_dt_s, 0)
    net = PacketNetwork(route_table(topo), routing, params or PacketParams(), opts)
    wall, cpu = time.perf_counter(), time.process_time()
    run = net.simulate(flows)
    return run, time.perf_counter() - wall, time.process_time() - cpu


def _line(name: str, run, wall: float, cpu: float, detail: str) -> None:
    print(
        f"{name:<42} wall {wall:6.2f} s  cpu {cpu:6.2f} s  {run.events:>10,} events"
        f"  {run.events / wall:>11,.0f} ev/s wall  {run.events / cpu:>11,.0f} ev/s cpu  {detail}"
    )


def compile_time() -> None:
    topo = _star(3, 100)
    _, wall, cpu = _run(topo, make_flows([1], 0, 4096.0), "hpcc")
    print(f"{'first call (compile or cache load)':<42} wall {wall:6.2f} s  cpu {cpu:6.2f} s")


def incast_64() -> None:
    topo = _star(65, 400)
    flows = pattern_flows(Pattern.INCAST, 65, 1e6, 0)
    ideal = 64e6 / topo.line_rate_Bps
    for cc in ("none", "dcqcn", "hpcc"):
        run, wall, cpu = _run(topo, flows, cc)
        _line(f"64->1 incast 1 MB @400G, cc {cc}", run, wall, cpu, f"makespan / (N S / C) {run.end_s / ideal:.3f}")


def events_per_second() -> None:
    topo = _star(256, 100, latency_s=1e-6)
    flows = pattern_flows(Pattern.INCAST, 256, 1e6, 0)
    run, wall, cpu = _run(topo, flows, "dcqcn")
    _line("255->1 incast 1 MB @100G, dcqcn", run, wall, cpu, f"pause frames {run.pause_frames.sum()}")
    tree = fat_tree(8, LinkParams(50e9, 330e-9))
    flows = pattern_flows(Pattern.PERMUTATION, tree.hosts, 4e6, 0)
    run, wall, cpu = _run(tree, flows, "none", routing=Routing.SPRAY)
    mean = host_throughput_fraction(flows, run.finish_s, tree.line_rate_Bps).mean()
    _line("k=8 fat-tree permutation 4 MB, spray", run, wall, cpu, f"throughput fraction {mean:.3f}")


def spray_k16() -> None:
    """Spraying at k=16: the issue's events-per-second case (PFC, no CC, headers as RoCEv2's)."""
    tree = fat_tree(16, LinkParams(400e9 / 8, 1e-6))
    flows = pattern_flows(Pattern.PERMUTATION, tree.hosts, 1e6, 1)
    run, wall, cpu = _run(tree, flows, "none", routing=Routing.SPRAY)
    mean = host_throughput_fraction(flows, run.finish_s, tree.line_rate_Bps).mean()
    _line("k=16 fat-tree permutation 1 MB, spray", run, wall, cpu, f"throughput fraction {mean:.3f}")


def dcqcn_profiles() -> None:
    topo = _star(5, 100)
    flows = make_flows([1, 2, 3, 4], 0, 60e6, np.arange(4) * 0.5e-3)
    profiles = {
        "default": {},
        "gentle": {"timer_s": 1200e-6, "rai_Bps": 1e6 / 8, "rhai_Bps": 10e6 / 8},
        "aggressive": {"timer_s": 75e-6, "rai_Bps": 50e6 / 8, "rhai_Bps": 500e6 / 8},
    }
    for name, overrides in profiles.items():
        cells = []
        for seed in range(4):
            opts = RunOptions(CongestionControl.DCQCN, Lossless.PFC, topo.line_rate_Bps, 100e-6, seed)
            run = PacketNetwork(route_table(topo), Routing.ECMP, PacketParams(**overrides), opts).simulate(flows)
            end = int(run.finish_s.min() / 100e-6) - 1
            rates = (run.series_delivered[end] - run.series_delivered[end - 40]) / 4e-3
            jain = rates.sum() ** 2 / (4 * (rates**2).sum())
            cells.append(f"{jain:.3f}/{rates.sum() / topo.line_rate_Bps:.2f}")
        print(f"DCQCN 4->1 {name:<11} Jain/utilisation per seed: {'  '.join(cells)}")


if __name__ == "__main__":
    if sys.argv[1:] == ["spray16"]:
        compile_time()
        spray_k16()
        sys.exit(0)
    compile_time()
    incast_64()
    events_per_second()
    spray_k16()
    dcqcn_profiles()
