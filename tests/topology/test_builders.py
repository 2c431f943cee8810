"""Topology builders: sizes, capacities, wiring and bad parameters."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.api.topologies import build_topology as parse_topology
from fabricsim.errors import FabricsimError
from fabricsim.topology.builders import (
    LinkParams,
    RailSpec,
    dragonfly,
    fat_tree,
    leaf_spine,
    nvl72_domain,
    nvswitch_domain,
    rail_optimized,
    torus,
)
from fabricsim.topology.graph import NodeKind, cable_of, remove_links
from fabricsim.topology.system import build_system_topology

LINK = LinkParams(50e9, 1e-6)


def _degree(topo, node_kind):
    out = np.bincount(topo.link_src, minlength=topo.nodes)
    return out[topo.node_kind == node_kind]


@pytest.mark.parametrize("k", [4, 8])
def test_fat_tree_counts_match_al_fares(k):
    topo = fat_tree(k, LINK)
    assert topo.hosts == k**3 // 4
    assert int((topo.node_kind == NodeKind.SWITCH).sum()) == 5 * k * k // 4
    assert topo.links == 2 * 3 * k**3 // 4  # three cable layers of k^3/4 each, two directions
    assert set(_degree(topo, NodeKind.SWITCH)) == {k}  # every switch uses all k ports


def test_every_cable_has_both_directions_with_equal_capacity():
    topo = dragonfly(4, 2, 2, LINK)
    forward = {(a, b): c for a, b, c in zip(topo.link_src, topo.link_dst, topo.capacity_Bps, strict=True)}
    assert all(forward[(b, a)] == c for (a, b), c in forward.items())


def test_leaf_spine_oversubscription_sets_uplink_capacity():
    topo = leaf_spine(4, 2, 8, LINK, oversubscription=2)
    switch = topo.node_kind[topo.link_src] == NodeKind.SWITCH
    uplinks = switch & (topo.node_kind[topo.link_dst] == NodeKind.SWITCH)
    # 8 hosts x 50 GB/s / (2 x 2 spines) = 100 GB/s per uplink
    assert np.allclose(topo.capacity_Bps[uplinks], 8 * 50e9 / 4)


def test_dragonfly_has_one_global_link_per_group_pair():
    a, p, h = 4, 2, 2
    topo = dragonfly(a, p, h, LINK)
    groups = a * h + 1
    assert topo.hosts == groups * a * p
    router = topo.node_kind == NodeKind.SWITCH
    group_of = np.full(topo.nodes, -1)
    group_of[np.flatnonzero(router)] = np.arange(groups * a) // a
    gs, gd = group_of[topo.link_src], group_of[topo.link_dst]
    inter = (gs >= 0) & (gd >= 0) & (gs != gd)
    pairs = {(int(x), int(y)) for x, y in zip(gs[inter], gd[inter], strict=True)}
    assert len(pairs) == groups * (groups - 1) and int(inter.sum()) == groups * (groups - 1)
    assert set(_degree(topo, NodeKind.SWITCH)) == {p + (a - 1) + h}


def test_torus_router_degree():
    topo = torus((4, 4, 4), LINK)
    assert topo.hosts == 64
    assert set(_degree(topo, NodeKind.SWITCH)) == {1 + 6}
    assert set(_degree(torus((2, 3), LINK), NodeKind.SWITCH)) == {1 + 1 + 2}


def test_nvswitch_and_nvl72_domains_flag_in_network_reduction():
    nvl = nvl72_domain()
    assert nvl.hosts == 72 and nvl.reduction.sum() == 1
    assert np.all(nvl.capacity_Bps == 900e9)
    assert nvswitch_domain(8, LINK, reduction=False).reduction.sum() == 0


def test_rail_optimized_puts_gpu_i_of_every_node_on_rail_i():
    topo = rail_optimized(RailSpec(nodes=4, rails=8, radix=16, nic=LINK))
    leaf_of = topo.link_dst[np.searchsorted(topo.link_src, topo.endpoints)]  # endpoints have one link each
    leaves = leaf_of.reshape(4, 8)
    assert np.all(leaves == leaves[0])  # same leaf per rail across nodes
    assert len(set(leaves[0])) == 8  # a different leaf for each rail


def test_system_topology_from_catalog_spec():
    system = catalog.load_system("dgx-h100")
    topo = build_system_topology(system, 64)
    assert topo.hosts == 64
    assert int((topo.node_kind == NodeKind.NIC).sum()) == 64
    assert topo.reduction.sum() == 8  # one NVLS-capable NVSwitch per node; scale-out SHARP off
    assert topo.line_rate_Bps == pytest.approx(50e9)
    gb = build_system_topology(catalog.load_system("gb200-nvl72"), 144)
    assert gb.reduction.sum() == 2  # two NVL72 domains


def test_remove_links_drops_both_directions_of_a_cable():
    topo = fat_tree(4, LINK)
    cable = cable_of(topo, 20)
    smaller = remove_links(topo, cable)
    assert smaller.links == topo.links - 2
    with pytest.raises(FabricsimError, match="failed_links"):
        remove_links(topo, [topo.links])


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("fat-tree:k=7", "k"),
        ("fat-tree:k=0", "k"),
        ("fat-tree:k=4,hosts=17", "hosts"),
        ("leaf-spine:leaves=2,spines=0,hosts_per_leaf=4", "spines"),
        ("leaf-spine:leaves=2,spines=40,hosts_per_leaf=40,radix=64", "hosts_per_leaf"),
        ("dragonfly:a=8,p=4", "h"),
        ("torus:dims=8xq", "dims"),
        ("torus:dims=2x2x2x2", "dims"),
        ("mesh:k=4", "topology"),
        ("fat-tree:k", "topology"),
        ("nvswitch:system=dgx-z900", "system"),
    ],
)
def test_bad_builder_strings_name_the_field(text, field):
    with pytest.raises(FabricsimError) as info:
        parse_topology(text)
    # the error names the topology option; the key it is about leads its message (dims: ...)
    assert info.value.field == "topology" and (field == "topology" or f" {field}: " in info.value.problem)


def test_builder_strings():
    assert parse_topology("fat-tree:k=4").hosts == 16
    assert parse_topology("leaf-spine:leaves=16,spines=8,hosts_per_leaf=16,oversubscription=2").hosts == 256
    assert parse_topology("dragonfly:a=8,p=4,h=4").hosts == 33 * 32
    assert parse_topology("torus:dims=8x8x8").hosts == 512
    assert parse_topology("fat-tree:k=4,gbps=100").line_rate_Bps == pytest.approx(12.5e9)
    assert parse_topology("dgx-a100:gpus=32").hosts == 32


def test_nvswitch_builder_takes_the_scale_up_of_its_system():
    h100 = parse_topology("nvswitch")  # default system dgx-h100: 8 GPUs, 450 GB/s, NVLS
    assert h100.hosts == 8 and h100.line_rate_Bps == pytest.approx(450e9) and h100.reduction.any()
    a100 = parse_topology("nvswitch:system=dgx-a100,gpus=4")
    assert a100.hosts == 4 and a100.line_rate_Bps == pytest.approx(300e9) and not a100.reduction.any()
    nvl = parse_topology("nvswitch:system=gb200-nvl72")
    assert nvl.hosts == 72 and nvl.line_rate_Bps == pytest.approx(900e9)
