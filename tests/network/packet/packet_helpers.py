"""Small builders shared by the packet-fidelity tests: a one-switch star and a run wrapper."""

from __future__ import annotations

from fabricsim.network.base import FlowSet
from fabricsim.network.packet.model import PacketNetwork, PacketRun
from fabricsim.network.packet.params import HEADERS, CongestionControl, Lossless, PacketParams, RunOptions
from fabricsim.topology.builders import LinkParams, nvswitch_domain
from fabricsim.topology.graph import Topology
from fabricsim.topology.routing import Routing, route_table

LATENCY_S = 330e-9  # one hop, as the catalog's Quantum-2 port-to-port latency used by parse_topology


def star(hosts: int, gbps: float, latency_s: float = LATENCY_S) -> Topology:
    """``hosts`` endpoints on one switch, ``gbps`` per port (a single ToR)."""
    return nvswitch_domain(hosts, LinkParams(gbps * 1e9 / 8, latency_s), reduction=False, name="switch")


def simulate(topo: Topology, flows: FlowSet, cc: str = "none", lossless: str = "pfc", **kw) -> PacketRun:
    """Run ``flows`` with ``PacketParams(**params)``; ``routing``, ``sample_dt_s`` and ``seed`` by keyword."""
    routing = kw.pop("routing", Routing.ECMP)
    dt = kw.pop("sample_dt_s", 0.0)
    seed = kw.pop("seed", 0)
    opts = RunOptions(CongestionControl(cc), Lossless(lossless), topo.line_rate_Bps, dt, seed)
    return PacketNetwork(route_table(topo), routing, PacketParams(**kw), opts).simulate(flows)


def jain(values) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2)."""
    total = float(sum(values))
    return total * total / (len(values) * float(sum(v * v for v in values)))


def goodput(family: str = "roce", mtu_bytes: float = 4096.0) -> float:
    """The payload fraction of line rate of full packets: MTU / (MTU + headers + gap) (params.HEADERS)."""
    header, gap = HEADERS[family]
    return mtu_bytes / (mtu_bytes + header + gap)
