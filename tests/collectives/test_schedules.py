"""Collective flow schedules: steps, bytes, folding, and flow vs analytic without contention."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.collectives import estimate, place_group
from fabricsim.collectives.ops import Algorithm, CollectiveOp
from fabricsim.collectives.schedules import (
    ScheduleRequest,
    bandwidth_step,
    build_schedule,
    ring_channels,
    run_schedule,
)
from fabricsim.errors import FabricsimError
from fabricsim.network.analytic import AnalyticNetwork
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.builders import LinkParams, fat_tree, nvswitch_domain
from fabricsim.topology.routing import Routing, route_table
from fabricsim.topology.system import build_system_topology

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


def test_channel_rings_spread_two_nodes_over_every_nic_like_nccl():
    """Ring all-reduce on 2 dgx-a100 nodes: one ring leaves each node through one NIC; 8 channel
    rings (ranks_per_node=8) use all 8, ~8x faster and within 10% of the analytic ring; the
    one-step bandwidth form (the engine's) times the same bytes on the same channels."""
    system = catalog.load_system("dgx-a100")
    n, size = 16, 2**28
    network = FlowNetwork(route_table(build_system_topology(system, n)), Routing.SPRAY, 0)
    one, eight = (
        run_schedule(
            build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.RING, n, size, per)),
            network,
            np.arange(n),
        )
        for per in (1, 8)
    )
    analytic = estimate(CollectiveOp.ALL_REDUCE, size, place_group(system, n), Algorithm.RING).time_s
    assert one.time_s > 6 * eight.time_s
    assert eight.time_s == pytest.approx(analytic, rel=0.1)
    step = bandwidth_step(CollectiveOp.ALL_REDUCE, np.arange(n)[None, :], size, 8)
    assert step.src.size == 8 * n
    assert _sent_per_rank([step], n) == pytest.approx(np.full(n, 2 * (n - 1) / n * size))
    assert run_schedule([step], network, np.arange(n)).time_s == pytest.approx(eight.time_s, rel=0.05)


def test_bandwidth_step_all_to_all_and_send_recv():
    groups = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    a2a = bandwidth_step(CollectiveOp.ALL_TO_ALL, groups, 400.0)
    assert a2a.src.size == 2 * 4 * 3 and np.all(a2a.size_bytes == 100.0)
    assert set(zip(a2a.src.tolist(), a2a.dst.tolist(), strict=True)) == {
        (s, d) for g in groups.tolist() for s in g for d in g if s != d
    }
    p2p = bandwidth_step(CollectiveOp.SEND_RECV, groups[:, :2], 7.0)
    assert p2p.src.tolist() == [0, 4] and p2p.dst.tolist() == [1, 5]


@pytest.mark.parametrize(("domains", "per_domain"), [(2, 8), (3, 8), (4, 4), (5, 3), (32, 8), (9, 4)])
def test_channel_rings_hop_between_domains_on_one_rail(domains, per_domain):
    """Issue 23: ring c entered each domain at local rank c and left it from c - 1, so every hop
    between domains changed rails (on a rail-optimized Clos, a climb to the spines). Now the rank
    that leaves a domain has the local rank of the one it enters; every ring visits every rank once,
    and each domain is entered (and left) at a different local rank by every channel."""
    n = domains * per_domain
    rings = ring_channels(np.arange(2 * n).reshape(2, n), per_domain)
    assert rings.shape == (2, per_domain, n)
    for group, ranks in enumerate(rings):
        for ring in ranks:
            assert sorted(ring.tolist()) == list(range(group * n, (group + 1) * n))
        nxt = np.roll(ranks, -1, axis=1)
        cross = ranks // per_domain != nxt // per_domain
        assert cross.sum() == per_domain * domains  # each ring crosses every domain boundary once
        assert np.all(ranks[cross] % per_domain == nxt[cross] % per_domain)
        entries = nxt[cross].reshape(per_domain, domains) % per_domain
        assert all(len(set(entries[:, d].tolist())) == per_domain for d in range(domains))


def test_two_ranks_per_domain_over_an_odd_domain_count_cross_rails_once():
    rings = ring_channels(np.arange(6)[None, :], 2)[0]
    nxt = np.roll(rings, -1, axis=1)
    cross = rings // 2 != nxt // 2
    assert int((rings[cross] % 2 != nxt[cross] % 2).sum()) == 2  # one hop per ring (a 2-colouring of 3)
