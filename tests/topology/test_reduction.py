"""Aggregation trees over reduction switches and switches exposed as flow endpoints."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fabricsim.network.base import make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.builders import LinkParams, fat_tree, nvswitch_domain
from fabricsim.topology.graph import NodeKind
from fabricsim.topology.reduction import expose_nodes, reduction_tree
from fabricsim.topology.routing import route_table

IB = LinkParams(50e9, 1e-6)


def test_fat_tree_tree_is_rooted_at_a_core_with_one_aggregation_per_pod():
    topo = fat_tree(4, IB)
    topo = replace(topo, reduction=topo.node_kind == NodeKind.SWITCH)
    tree = reduction_tree(topo, topo.endpoints)
    root = tree.nodes[tree.root]
    assert root == topo.nodes - 4  # the lowest-id core switch (cores are built last)
    assert tree.nodes.size == 16 + 8 + 4 + 1
    assert np.array_equal(tree.depth[:16], np.full(16, 3))
    assert np.array_equal(np.bincount(tree.parent[tree.parent >= 0])[tree.root], 4)
    assert np.all(tree.up_latency_s[tree.parent >= 0] == IB.latency_s)


def test_single_switch_tree_and_exposed_endpoints():
    topo = nvswitch_domain(4, LinkParams(450e9, 0.6e-6))
    tree = reduction_tree(topo, topo.endpoints[[2, 0]])
    assert list(tree.nodes) == [2, 0, 4] and list(tree.parent) == [2, 2, -1]
    exposed, where = expose_nodes(topo, tree.nodes)
    assert exposed.hosts == 5 and list(where) == [2, 0, 4]
    same, idx = expose_nodes(topo, topo.endpoints[:2])
    assert same is topo and list(idx) == [0, 1]


def test_exposing_switches_leaves_host_routes_unchanged():
    topo = fat_tree(4, IB)
    exposed, _ = expose_nodes(topo, np.arange(16, topo.nodes))
    flows = make_flows(np.arange(16), (np.arange(16) * 5 + 3) % 16, 1e9, np.arange(16) * 1e-6)
    before = FlowNetwork(route_table(topo)).run(flows)
    after = FlowNetwork(route_table(exposed)).run(flows)
    assert np.array_equal(before.finish_s, after.finish_s)
    assert np.array_equal(before.link_bytes, after.link_bytes)
