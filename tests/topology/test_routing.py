"""Routing: shortest paths, ECMP hashing (the 1 - 1/e oracle), spraying, adaptive, failures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.topology.builders import LinkParams, fat_tree, leaf_spine
from fabricsim.topology.graph import cable_of, remove_links
from fabricsim.topology.routing import FlowEnds, Routing, parse_routing, route, route_table

LINK = LinkParams(50e9, 1e-6)


def _ends(src, dst):
    src, dst = np.asarray(src), np.asarray(dst)
    return FlowEnds(src, dst, np.zeros(src.size), np.zeros(src.size, dtype=np.int64))


@pytest.fixture(scope="module")
def k4():
    topo = fat_tree(4, LINK)
    return topo, route_table(topo)


@pytest.mark.parametrize(("dst", "hops"), [(1, 2), (2, 4), (4, 6), (15, 6)])
def test_fat_tree_path_lengths(k4, dst, hops):
    _, table = k4
    routes = route(table, _ends([0], [dst]), Routing.ECMP, seed=0)
    assert routes.incidence.nnz == hops
    assert routes.latency_s[0] == pytest.approx(hops * 1e-6)


def test_spray_splits_evenly_over_all_equal_cost_paths(k4):
    _, table = k4
    weights = route(table, _ends([0], [15]), Routing.SPRAY, seed=0).incidence.toarray()[:, 0]
    used = weights[weights > 0]
    # inter-pod in a k=4 fat-tree: 2 edge uplinks, 4 core links up, 4 down, 2 agg downlinks, host links
    assert sorted(np.round(used, 6)) == sorted([1.0] * 2 + [0.5] * 4 + [0.25] * 8)
    assert weights.sum() == pytest.approx(6.0)  # every hop carries the whole flow


def test_ecmp_is_deterministic_per_seed_and_varies_across_seeds(k4):
    _, table = k4
    ends = _ends(np.arange(16), (np.arange(16) + 5) % 16)
    a = route(table, ends, Routing.ECMP, seed=3).incidence
    b = route(table, ends, Routing.ECMP, seed=3).incidence
    assert (a != b).nnz == 0
    assert any((route(table, ends, Routing.ECMP, seed=s).incidence != a).nnz for s in range(4, 8))


def test_ecmp_one_stage_uses_one_minus_one_over_e_of_the_links():
    """n flows hashed onto n equal uplinks: expected fraction used 1 - (1 - 1/n)^n -> 1 - 1/e."""
    n = 128
    topo = leaf_spine(2, n, n, LINK)
    table = route_table(topo)
    ends = _ends(np.arange(n), n + np.arange(n))
    uplinks = np.flatnonzero((topo.link_src == topo.endpoints.size) & (topo.link_dst > topo.endpoints.size + 1))
    fractions = []
    for seed in range(20):
        used = np.asarray(route(table, ends, Routing.ECMP, seed).incidence[uplinks].sum(axis=1)).ravel() > 0
        fractions.append(used.mean())
    expected = 1 - (1 - 1 / n) ** n
    assert expected == pytest.approx(1 - 1 / math.e, abs=0.002)
    assert np.mean(fractions) == pytest.approx(expected, abs=0.015)


def test_adaptive_spreads_flows_that_ecmp_may_collide(k4):
    _, table = k4
    ends = _ends([0, 1], [4, 5])  # two flows out of one edge switch, two uplinks
    incidence = route(table, ends, Routing.ADAPTIVE, seed=0).incidence
    per_link = np.asarray(incidence.sum(axis=1)).ravel()
    assert per_link.max() == 1  # no link carries both


def test_failed_link_reroutes_or_reports(k4):
    topo, table = k4
    path = route(table, _ends([0], [15]), Routing.ECMP, seed=0).incidence.nonzero()[0]
    switch_links = [
        int(link) for link in path if topo.node_kind[topo.link_src[link]] and topo.node_kind[topo.link_dst[link]]
    ]
    degraded = remove_links(topo, cable_of(topo, switch_links[0]))
    rerouted = route(route_table(degraded), _ends([0], [15]), Routing.ECMP, seed=0)
    assert rerouted.incidence.nnz == 6
    host_link = int(np.flatnonzero(topo.link_src == topo.endpoints[0])[0])
    cut = route_table(remove_links(topo, cable_of(topo, host_link)))
    with pytest.raises(FabricsimError, match="no path"):
        route(cut, _ends([0], [15]), Routing.ECMP, seed=0)


def test_unknown_routing_and_bad_endpoints(k4):
    _, table = k4
    with pytest.raises(FabricsimError, match="routing"):
        parse_routing("round-robin")
    with pytest.raises(FabricsimError, match="dst"):
        route(table, _ends([0], [16]), Routing.ECMP, seed=0)
