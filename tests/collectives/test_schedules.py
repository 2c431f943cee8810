"""Collective flow schedules: steps, bytes, folding, and flow vs analytic without contention."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.collectives.ops import Algorithm, CollectiveOp
from fabricsim.collectives.schedules import ScheduleRequest, build_schedule, run_schedule
from fabricsim.errors import FabricsimError
from fabricsim.network.analytic import AnalyticNetwork
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.builders import LinkParams, fat_tree, nvswitch_domain
from fabricsim.topology.routing import Routing, route_table

NVLINK = LinkParams(450e9, 0.6e-6)
GIB = 2**30


def _sent_per_rank(steps, ranks):
    sent = np.zeros(ranks)
    for step in steps:
        np.add.at(sent, step.src, step.size_bytes)
    return sent


def test_ring_all_reduce_steps_and_bytes():
    n = 8
    steps = build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.RING, n, GIB))
    assert len(steps) == 2 * (n - 1)
    assert _sent_per_rank(steps, n) == pytest.approx(np.full(n, 2 * (n - 1) / n * GIB))


def test_halving_doubling_and_hierarchical_move_the_optimal_bytes():
    n = 16
    hd = build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.HALVING_DOUBLING, n, GIB))
    assert len(hd) == 2 * 4
    assert _sent_per_rank(hd, n) == pytest.approx(np.full(n, 2 * (n - 1) / n * GIB))
    hier = build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.HIERARCHICAL, n, GIB, ranks_per_node=4))
    assert len(hier) == 3 + 2 * 3 + 3


def test_all_to_all_direct_and_pairwise():
    n = 6
    direct = build_schedule(ScheduleRequest(CollectiveOp.ALL_TO_ALL, Algorithm.DIRECT, n, 6e6))
    pairwise = build_schedule(ScheduleRequest(CollectiveOp.ALL_TO_ALL, Algorithm.RING, n, 6e6))
    assert len(direct) == 1 and direct[0].src.size == n * (n - 1)
    assert len(pairwise) == n - 1
    assert _sent_per_rank(direct, n) == pytest.approx(_sent_per_rank(pairwise, n))


def test_tree_levels_and_unsupported_pairs():
    steps = build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.TREE, 7, 1e6))
    assert len(steps) == 4  # depth 2: two levels up, two down
    with pytest.raises(FabricsimError, match="power-of-two"):
        build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.HALVING_DOUBLING, 6, 1e6))
    with pytest.raises(FabricsimError, match="no flow schedule"):
        build_schedule(ScheduleRequest(CollectiveOp.BROADCAST, Algorithm.NVLS, 8, 1e6))
    assert build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.RING, 1, 1e6)) == []


@pytest.mark.parametrize("algorithm", [Algorithm.RING, Algorithm.HALVING_DOUBLING])
def test_uncontended_collective_flow_time_matches_analytic_within_5_percent(algorithm):
    """On one NVSwitch, ring and halving-doubling flows never share a link: the flow model must
    agree with the network/analytic alpha-beta model on the same schedule, and with the closed form
    2 (n - 1) (alpha + S / (n B)) for the ring (Patarasuk & Yuan 2009)."""
    n = 8
    table = route_table(nvswitch_domain(n, NVLINK))
    steps = build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, algorithm, n, GIB))
    flow = run_schedule(steps, FlowNetwork(table), np.arange(n))
    analytic = run_schedule(steps, AnalyticNetwork(table), np.arange(n))
    assert flow.time_s == pytest.approx(analytic.time_s, rel=0.05)
    closed_form = 2 * (n - 1) * (2 * NVLINK.latency_s + GIB / (n * NVLINK.capacity_Bps))
    assert flow.time_s == pytest.approx(closed_form, rel=0.05)


def test_ring_steps_are_folded_and_contention_shows_on_a_fat_tree():
    topo = fat_tree(4, LinkParams(50e9, 1e-6))
    steps = build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.RING, 16, GIB))
    placement = np.random.default_rng(0).permutation(16)
    timed = run_schedule(steps, FlowNetwork(route_table(topo), Routing.ECMP, 0), placement)
    assert (timed.simulated_steps, timed.folded_steps) == (1, 29)
    alone = run_schedule(steps, AnalyticNetwork(route_table(topo)), placement)
    assert timed.time_s >= alone.time_s * (1 - 1e-9)
