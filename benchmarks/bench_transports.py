"""Transports side by side (issue 26; not run in CI): ``python benchmarks/bench_transports.py``.

The scenarios of the htsim comparison (400 Gb/s, 1 us links): a k=8 fat-tree permutation of 4 MB
flows and N -> 1 incasts of 1 MB (N = 8, 16, 64), under RoCE (PFC, DCQCN, ECMP, go-back-N),
InfiniBand (credits, adaptive routing as spraying) and Ultra Ethernet (lossy with trimming, NSCC,
256 entropies, selective repeat; with and without receiver credits). Prints the mean throughput
fraction, last FCT, drops, trimmed packets and resent bytes of each, and the run's speed. A UEC
reference (htsim's EQDS) is not run here: bench_vs_htsim.py runs htsim beside fabricsim.
"""

from __future__ import annotations

import time
from dataclasses import replace

from fabricsim.network.packet.model import PacketNetwork
from fabricsim.network.packet.params import RunOptions
from fabricsim.network.patterns import Pattern, host_throughput_fraction, pattern_flows
from fabricsim.network.phase import named_transport
from fabricsim.topology.builders import LinkParams, fat_tree, nvswitch_domain
from fabricsim.topology.routing import route_table

LINK = LinkParams(400e9 / 8, 1e-6)
TRANSPORTS = (("roce", {}), ("ib", {}), ("uet", {}), ("uet+rccc", {"rccc": 1.0}))


def _run(topo, flows, name: str, extra: dict[str, float], seed: int = 0):
    chosen = named_transport(name.split("+")[0])
    opts = RunOptions(chosen.cc, chosen.lossless, topo.line_rate_Bps, 0.0, seed)
    net = PacketNetwork(route_table(topo), chosen.routing, replace(chosen.params, **extra), opts)
    cpu = time.process_time()
    run = net.simulate(flows)
    return run, time.process_time() - cpu


def _row(label: str, flows, run, cpu_s: float, line_Bps: float) -> None:
    fraction = host_throughput_fraction(flows, run.finish_s, line_Bps).mean()
    print(f"{label:<28} thr {fraction:6.3f}  last FCT {run.end_s * 1e6:9.1f} us  drops {run.drops:6d}  "
          f"trimmed {run.trimmed_packets:6d}  resent {run.retransmitted_bytes / 1e6:8.2f} MB  "
          f"{run.events / max(cpu_s, 1e-9) / 1e6:5.2f} M ev/s")  # fmt: skip


def main() -> None:
    tree = fat_tree(8, LINK)
    perm = pattern_flows(Pattern.PERMUTATION, tree.hosts, 4e6, 1)
    _run(tree, pattern_flows(Pattern.PERMUTATION, tree.hosts, 4e4, 1), "uet", {})  # compile / load the kernel
    for name, extra in TRANSPORTS:
        run, cpu = _run(tree, perm, name, extra, seed=1)
        _row(f"k=8 permutation 4MB {name}", perm, run, cpu, tree.line_rate_Bps)
    for n in (8, 16, 64):
        star = nvswitch_domain(n + 1, LINK, reduction=False, name="switch")
        incast = pattern_flows(Pattern.INCAST, n + 1, 1e6, 0)
        for name, extra in TRANSPORTS:
            run, cpu = _run(star, incast, name, extra)
            _row(f"{n}->1 incast 1MB {name}", incast, run, cpu, star.line_rate_Bps)


if __name__ == "__main__":
    main()
