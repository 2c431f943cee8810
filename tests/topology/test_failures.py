"""Cable failures: cables pair both directions, only fabric cables fail, seeded draws, routing
around the failed cables, and unroutable flows detected before routing."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.api.topologies import build_topology as parse_topology
from fabricsim.errors import FabricsimError
from fabricsim.topology.builders import LinkParams, fat_tree, leaf_spine
from fabricsim.topology.graph import NodeKind, cables, fabric_cables, fail_cables, remove_links
from fabricsim.topology.routing import FlowEnds, Routing, route, route_table, unroutable

LINK = LinkParams(50e9, 1e-6)


@pytest.mark.parametrize("text", ["fat-tree:k=4", "dgx-h100:gpus=16", "torus:dims=3x3"])
def test_cables_pair_every_link_with_its_reverse(text):
    topo = parse_topology(text)
    pairs = cables(topo)
    assert sorted(pairs.ravel().tolist()) == list(range(topo.links))
    assert np.array_equal(topo.link_src[pairs[:, 0]], topo.link_dst[pairs[:, 1]])
    assert np.array_equal(topo.link_dst[pairs[:, 0]], topo.link_src[pairs[:, 1]])


def test_fabric_cables_leave_out_the_endpoint_access_cables():
    topo = fat_tree(8, LINK)
    fabric = fabric_cables(topo)
    assert fabric.shape == (2 * 8**3 // 4, 2)  # edge-agg and agg-core layers; not host-edge
    assert np.all(topo.node_kind[topo.link_src[fabric.ravel()]] != NodeKind.GPU)


def test_fail_cables_is_seeded_and_removes_both_directions():
    topo = fat_tree(8, LINK)
    failed, ids = fail_cables(topo, 10, seed=4)
    again, same = fail_cables(topo, 10, seed=4)
    _, other = fail_cables(topo, 10, seed=5)
    assert np.array_equal(ids, same) and not np.array_equal(ids, other)
    assert failed.links == again.links == topo.links - 20
    with pytest.raises(FabricsimError) as info:
        fail_cables(topo, 257, seed=0)
    assert info.value.field == "fail-links"


def test_routes_avoid_failed_cables():
    topo = fat_tree(8, LINK)
    failed, ids = fail_cables(topo, 40, seed=1)
    dead = {(int(topo.link_src[i]), int(topo.link_dst[i])) for i in ids.ravel()}
    src = np.arange(topo.hosts)
    ends = FlowEnds(src, (src + 37) % topo.hosts, np.zeros(src.size), np.zeros(src.size, dtype=np.int64))
    for policy in Routing:
        used = np.unique(route(route_table(failed), ends, policy, seed=0).incidence.nonzero()[0])
        assert dead.isdisjoint(zip(failed.link_src[used].tolist(), failed.link_dst[used].tolist(), strict=True))


def test_unroutable_flags_the_pairs_a_failure_disconnects():
    topo = leaf_spine(2, 1, 2, LINK, 1.0)  # hosts 0, 1 on leaf 0; 2, 3 on leaf 1; one spine
    cut = route_table(remove_links(topo, fabric_cables(topo)[0]))
    lost = unroutable(cut, np.array([0, 0, 2, 3, 1]), np.array([1, 2, 3, 0, 1]))
    assert lost.tolist() == [False, True, False, True, False]
    assert not unroutable(route_table(topo), np.array([0, 3]), np.array([3, 0])).any()
