"""Collective schedules from ``collectives`` as a packet-level workload: the packet network plugs
into :func:`run_schedule` like the flow network (the NetworkModel seam)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.api.topologies import build_topology as parse_topology
from fabricsim.collectives.ops import Algorithm, CollectiveOp
from fabricsim.collectives.schedules import ScheduleRequest, build_schedule, run_schedule
from fabricsim.network.flow import FlowNetwork
from fabricsim.network.packet.model import PacketNetwork
from fabricsim.network.packet.params import CongestionControl, Lossless, PacketParams, RunOptions
from fabricsim.topology.routing import Routing, route_table


@pytest.mark.parametrize(
    ("op", "algorithm"),
    [(CollectiveOp.ALL_REDUCE, Algorithm.RING), (CollectiveOp.ALL_TO_ALL, Algorithm.DIRECT)],
)
def test_collective_on_packets_matches_the_flow_fidelity(op, algorithm):
    topo = parse_topology("leaf-spine:leaves=2,spines=4,hosts_per_leaf=4,gbps=400")
    table = route_table(topo)
    steps = build_schedule(ScheduleRequest(op, algorithm, 8, 8e6))
    placement = np.arange(8)
    opts = RunOptions(CongestionControl.NONE, Lossless.PFC, topo.line_rate_Bps, 0.0, 0)
    packet = run_schedule(steps, PacketNetwork(table, Routing.SPRAY, PacketParams(), opts), placement)
    flow = run_schedule(steps, FlowNetwork(table, Routing.SPRAY, 0), placement)
    assert packet.time_s == pytest.approx(flow.time_s, rel=0.10)
    assert packet.time_s >= flow.time_s * 0.99  # packets never beat the fluid max-min bound
