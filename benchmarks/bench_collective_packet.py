"""``fabricsim collective --fidelity packet`` speed and what queues cost (not run in CI):
``python benchmarks/bench_collective_packet.py``.

Wall time of whole collectives through the public API (schedule, routing, the flow-fidelity run
it reports next to the packet one, and the packet run), after one warm-up call that loads the
numba kernel. Each line: endpoints, op and algorithm, topology, simulated time, packet / flow time,
wall time of the packet command (flow run included) and of the flow fidelity alone, packet events
per second of the packet part (wall less the flow run), PFC pause frames, ECN-marked fraction.

1. The issue's figure: a 64-endpoint ring all-reduce of 64 MiB on a k=8 fat-tree (400 Gb/s).
2. Scale: ring all-reduce on 256 and 512 endpoints of a k=16 fat-tree, direct all-to-all on 64
   and 256 endpoints.
3. Congestion: the 64-endpoint all-to-all on a 4:1 oversubscribed leaf-spine, no CC vs DCQCN
   (NVIDIA defaults) vs HPCC, PFC on: what the transport costs against the flow fidelity.
"""

from __future__ import annotations

import time
from dataclasses import replace

from fabricsim.api.network_collective import NetworkCollectiveSpec, network_collective

CASES = [
    ("all-reduce", 64, "64MiB", "fat-tree:k=8", {}),
    ("all-reduce", 256, "64MiB", "fat-tree:k=16", {}),
    ("all-reduce", 512, "64MiB", "fat-tree:k=16", {}),
    ("all-to-all", 64, "64MiB", "fat-tree:k=8", {}),
    ("all-to-all", 256, "16MiB", "fat-tree:k=16", {}),
]
OVERSUBSCRIBED = "leaf-spine:leaves=4,spines=4,hosts_per_leaf=16,gbps=400,oversubscription=4"


def _case(op: str, gpus: int, size: str, topology: str, extra: dict) -> None:
    spec = NetworkCollectiveSpec(op=op, system="dgx-h100", gpus=gpus, size=size, topology=topology,
                                 fidelity="packet", **extra)  # fmt: skip
    wall = time.perf_counter()
    out = network_collective(spec).result.to_json()
    wall = time.perf_counter() - wall
    flow_wall = time.perf_counter()
    network_collective(replace(spec, fidelity="flow", cc=None, lossless=None, buffer=None, spray=False, cc_params=()))
    flow_wall = time.perf_counter() - flow_wall
    label = ", ".join(f"{k}={v}" for k, v in extra.items()) or "cc=none"
    print(
        f"{gpus:4d} x {op} {size} ({out['algorithm']}) on {topology} [{label}]: "
        f"{out['time_s'] * 1e3:8.3f} ms simulated, packet/flow {out['packet_over_flow']:.3f}, "
        f"wall {wall:6.2f} s (flow alone {flow_wall:5.2f} s), "
        f"{out['events'] / max(wall - flow_wall, 1e-9) / 1e6:5.2f} M events/s, "
        f"{out['pause_frames']} pause frames, ECN {out['ecn_marked_fraction']:.3f}"
    )


def main() -> None:
    warm = time.perf_counter()
    _case("all-reduce", 8, "1MiB", "fat-tree:k=4", {})
    print(f"warm-up (kernel load) {time.perf_counter() - warm:.2f} s")
    for case in CASES:
        _case(*case)
    for cc in ("none", "dcqcn", "hpcc"):
        _case("all-to-all", 64, "16MiB", OVERSUBSCRIBED, {"cc": cc})


if __name__ == "__main__":
    main()
