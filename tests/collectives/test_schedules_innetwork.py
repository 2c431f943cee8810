"""In-network reduction schedules (NVLS on one NVSwitch, SHARP on a fat-tree) on the flow model:
the S/B bound, the closed forms, the ring they beat, link capacity and byte conservation, errors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.collectives.ops import Algorithm, CollectiveOp
from fabricsim.collectives.schedules import ScheduleRequest, build_schedule, run_schedule, schedule_on
from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.builders import LinkParams, fat_tree, nvswitch_domain
from fabricsim.topology.graph import NodeKind
from fabricsim.topology.routing import Routing, route_table

AR, RS, AG = CollectiveOp.ALL_REDUCE, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_GATHER
NVLINK = LinkParams(450e9, 0.6e-6)
IB = LinkParams(50e9, 1e-6)
GIB = 2**30


def _sharp_fat_tree(k: int):
    topo = fat_tree(k, IB)
    return replace(topo, reduction=topo.node_kind == NodeKind.SWITCH)


def _timed(op, algorithm, topo, routing=Routing.ECMP):
    p = topo.hosts
    placed = schedule_on(ScheduleRequest(op, algorithm, p, GIB), topo, np.arange(p))
    network = FlowNetwork(route_table(placed.topology), routing, 0)
    return placed, network, run_schedule(list(placed.steps), network, placed.placement)


def _ring_time(topo) -> float:
    p = topo.hosts
    steps = build_schedule(ScheduleRequest(AR, Algorithm.RING, p, GIB))
    return run_schedule(steps, FlowNetwork(route_table(topo)), np.arange(p)).time_s


@pytest.mark.parametrize("p", [4, 8, 72])
def test_nvls_all_reduce_meets_the_closed_form_and_beats_the_ring(p):
    """Each GPU moves S(1 + 1/p) each way through the switch (NCCL NVLS: multimem ld_reduce + st)."""
    topo = nvswitch_domain(p, NVLINK)
    _, _, timed = _timed(AR, Algorithm.NVLS, topo)
    bound = GIB / NVLINK.capacity_Bps
    closed_form = GIB * (1 + 1 / p) / NVLINK.capacity_Bps
    assert timed.time_s >= bound
    assert timed.time_s == pytest.approx(closed_form, rel=0.05)
    assert timed.time_s == pytest.approx(closed_form + 2 * NVLINK.latency_s, rel=1e-9)
    ring_closed_form = 2 * (p - 1) / p * GIB / NVLINK.capacity_Bps
    assert timed.time_s < ring_closed_form
    if p <= 8:
        assert timed.time_s < _ring_time(topo)


@pytest.mark.parametrize(("op", "up", "down"), [(RS, 1.0, 1 / 8), (AG, 1 / 8, 1.0)])
def test_nvls_reduce_scatter_and_all_gather_move_s_one_way(op, up, down):
    placed, _, timed = _timed(op, Algorithm.NVLS, nvswitch_domain(8, NVLINK))
    step = placed.steps[0]
    assert step.size_bytes[step.dst == 8] == pytest.approx(np.full(8, up * GIB))
    assert step.size_bytes[step.src == 8] == pytest.approx(np.full(8, down * GIB))
    bound = GIB / NVLINK.capacity_Bps
    assert timed.time_s == pytest.approx(bound, rel=0.05)
    # the longer direction ends S/B after its start (0 up, one hop down); the shorter one is
    # not tied to the longer one's tail (a modelling gap of at most one hop latency)
    start = 0.0 if up == 1.0 else NVLINK.latency_s
    assert timed.time_s == pytest.approx(start + bound + NVLINK.latency_s, rel=1e-9)


@pytest.mark.parametrize("k", [4, 8])
@pytest.mark.parametrize("routing", [Routing.ECMP, Routing.SPRAY])
def test_sharp_all_reduce_reaches_link_rate_on_a_fat_tree(k, routing):
    """Up to a core switch and back (6 hops): S/B + 6 link latencies; busbw -> 2(p-1)/p x B."""
    topo = _sharp_fat_tree(k)
    p = topo.hosts
    _, _, timed = _timed(AR, Algorithm.SHARP, topo, routing)
    bound = GIB / IB.capacity_Bps
    assert timed.time_s >= bound
    assert timed.time_s == pytest.approx(bound + 6 * IB.latency_s, rel=1e-9)
    assert timed.time_s == pytest.approx(bound, rel=0.05)
    bus_Bps = 2 * (p - 1) / p * GIB / timed.time_s
    assert bus_Bps == pytest.approx(2 * (p - 1) / p * IB.capacity_Bps, rel=0.001)
    assert timed.time_s < 2 * (p - 1) / p * GIB / IB.capacity_Bps
    assert timed.time_s < _ring_time(topo)


@pytest.mark.parametrize(
    ("algorithm", "topo"),
    [(Algorithm.NVLS, nvswitch_domain(8, NVLINK)), (Algorithm.SHARP, _sharp_fat_tree(4))],
    ids=["nvls", "sharp"],
)
def test_in_network_flows_respect_capacity_and_conserve_bytes(algorithm, topo):
    placed, network, _ = _timed(AR, algorithm, topo)
    step = placed.steps[0]
    p = topo.hosts
    flows = make_flows(placed.placement[step.src], placed.placement[step.dst], step.size_bytes, step.start_s)
    result = network.run(flows)
    assert result.peak_utilization.max() <= 1 + 1e-9
    hops = np.asarray(network.routes(flows).incidence.sum(axis=0)).ravel()
    assert result.link_bytes.sum() == pytest.approx(float(flows.size_bytes @ hops), rel=1e-12)
    per_rank = GIB * (1 + 1 / p) if algorithm is Algorithm.NVLS else GIB
    sent = np.bincount(step.src, weights=step.size_bytes, minlength=placed.placement.size)[:p]
    received = np.bincount(step.dst, weights=step.size_bytes, minlength=placed.placement.size)[:p]
    assert sent == pytest.approx(np.full(p, per_rank))
    assert received == pytest.approx(np.full(p, per_rank))
    assert np.all(np.isfinite(result.finish_s))


def test_sharp_tree_edges_each_carry_s_once():
    """Aggregation: a switch forwards one reduced stream, not its children's sum."""
    placed, network, _ = _timed(AR, Algorithm.SHARP, _sharp_fat_tree(4))
    step = placed.steps[0]
    flows = make_flows(placed.placement[step.src], placed.placement[step.dst], step.size_bytes, step.start_s)
    carried = network.run(flows).link_bytes
    assert carried[carried > 0] == pytest.approx(np.full(int((carried > 0).sum()), GIB))
    assert int((carried > 0).sum()) == 2 * (16 + 8 + 4)  # hosts, edges, one aggregation per pod


def test_in_network_schedules_without_a_capable_switch_are_refused():
    request = ScheduleRequest(AR, Algorithm.SHARP, 16, GIB)
    with pytest.raises(FabricsimError, match="no in-network reduction switch") as plain:
        schedule_on(request, fat_tree(4, IB), np.arange(16))
    assert plain.value.field == "algorithm"
    nvls = ScheduleRequest(AR, Algorithm.NVLS, 8, GIB)
    with pytest.raises(FabricsimError) as no_nvls:
        schedule_on(nvls, nvswitch_domain(8, NVLINK, reduction=False), np.arange(8))
    assert no_nvls.value.field == "algorithm"
    with pytest.raises(FabricsimError, match="one NVSwitch domain") as across:
        schedule_on(nvls, _sharp_fat_tree(4), np.arange(0, 16, 2))
    assert across.value.field == "algorithm"
    with pytest.raises(FabricsimError, match="without a topology") as bare:
        build_schedule(nvls)
    assert bare.value.field == "algorithm"


def test_a_merge_at_a_switch_that_cannot_reduce_is_refused():
    topo = fat_tree(4, IB)
    cores = np.zeros(topo.nodes, dtype=bool)
    cores[-4:] = True  # only the core switches reduce; edges would merge two hosts
    with pytest.raises(FabricsimError, match="cannot reduce") as bad:
        schedule_on(ScheduleRequest(AR, Algorithm.SHARP, 16, GIB), replace(topo, reduction=cores), np.arange(16))
    assert bad.value.field == "algorithm"


def test_other_algorithms_pass_through_schedule_on_unchanged():
    topo = nvswitch_domain(4, NVLINK)
    placed = schedule_on(ScheduleRequest(AR, Algorithm.RING, 4, GIB), topo, np.arange(4))
    assert placed.topology is topo and len(placed.steps) == 6
