"""Physics across fidelities with the fabric in the loop (hypothesis; issue 23).

* A collective alone on a random leaf-spine, placed at random: flow >= its bandwidth bound (nccl-tests
  bus bytes over the hosts' line rate, within 1%), and packet >= flow (within 1%).
* A whole training step on a non-blocking fabric, packed, no background: flow within 3% of the
  analytic step, and within 3% of the event engine with the analytic collective times (``simulate``),
  never below it.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricsim import api
from fabricsim.api.topologies import build_topology
from fabricsim.collectives.ops import bus_factor, parse_op
from fabricsim.engine.fabric_loop import Fabric, FabricJob, simulate_jobs
from fabricsim.network.flow import FlowNetwork
from fabricsim.network.phase import PacketPhaseNetwork, transport_for
from fabricsim.specs import LinkKind
from fabricsim.topology.placement import parse_placement, place
from fabricsim.topology.routing import route_table
from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream

OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")


@st.composite
def collectives(draw):
    leaves, per_leaf = draw(st.integers(2, 4)), draw(st.sampled_from([2, 4, 8]))
    spines = draw(st.integers(1, 2))
    oversubscription = draw(st.sampled_from([1, 2, 4]))
    ranks = draw(st.integers(2, min(8, leaves * per_leaf)))
    op = draw(st.sampled_from(OPS))
    size = draw(st.sampled_from([1 << 20, 1 << 23, 1 << 26]))
    seed = draw(st.integers(0, 1000))
    text = f"leaf-spine:leaves={leaves},spines={spines},hosts_per_leaf={per_leaf},oversubscription={oversubscription}"
    return text, ranks, op, size, seed


def _time(topology, network, ranks: int, op: str, size: int, seed: int) -> float:
    hosts = place(topology, ranks, 1, parse_placement(f"random:{seed}")).host_of_gpu
    payload = CommPayload(op, size, ranks)
    graph = OpGraph()
    graph.add_rank(RankClass("r", ranks))
    graph.add(Op("c", 0, Stream.DP_COMM, "dp-" + op, 1e-9, payload))
    (result,), _ = simulate_jobs([FabricJob("j", graph, hosts, 1)], Fabric(topology, network, 1))
    return result.step_time_s


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(collectives())
def test_packet_is_not_faster_than_flow_which_is_not_faster_than_the_bound(case):
    text, ranks, op, size, seed = case
    topology = build_topology(text)
    table = route_table(topology)
    flow = _time(topology, FlowNetwork(table), ranks, op, size, seed)
    bound = size * bus_factor(parse_op(op), ranks) / topology.line_rate_Bps
    assert flow >= bound * 0.99, (case, flow, bound)
    packet = _time(topology, PacketPhaseNetwork(table, transport_for(LinkKind.ROCE)), ranks, op, size, seed)
    assert packet >= flow * 0.99, (case, packet, flow)


@st.composite
def layouts(draw):
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([1, 2]))
    dp = draw(st.sampled_from([1, 2, 4]))
    return tp, pp, dp


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts())
def test_a_quiet_non_blocking_fabric_adds_under_3_percent_to_a_step(layout):
    tp, pp, dp = layout
    gpus = tp * pp * dp
    if gpus < 2:
        return
    args = ("llama3-8b", "dgx-h100", gpus, 16 * dp, 2048)
    shape = {"tp": tp, "pp": pp}
    simulated = api.simulate_train(*args, fidelity="simulate", **shape).train.step_time_s
    result = api.simulate_train(*args, fidelity="flow", **shape)
    flow, analytic = result.train.step_time_s, result.analytic_step_time_s
    assert simulated * (1 - 1e-9) <= flow <= simulated * 1.03, (layout, simulated, flow)
    assert abs(flow / analytic - 1) <= 0.03, (layout, analytic, flow)
    assert np.isfinite(flow)
