"""Builder strings: ``latency=`` (every link) and ``spine_gbps=`` (switch-to-switch links) on every
builder (issue 23), and misspelt keys refused instead of ignored."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.api.topologies import build_topology
from fabricsim.errors import FabricsimError
from fabricsim.topology.graph import NodeKind

SPINE_Bps = 800e9 / 8
HOST_Bps = 400e9 / 8  # the default ib-ndr port


def _switch_links(topo):
    kind = topo.node_kind
    return (kind[topo.link_src] == NodeKind.SWITCH) & (kind[topo.link_dst] == NodeKind.SWITCH)


@pytest.mark.parametrize(
    "text",
    [
        "fat-tree:k=4",
        "leaf-spine:leaves=4,spines=4,hosts_per_leaf=4",
        "rail-optimized:nodes=24,rails=2,radix=8",  # three tiers: leaf-aggregation and aggregation-core
        "dragonfly:a=4,p=2,h=2",
        "torus:dims=4x4",
    ],
)
def test_spine_gbps_sets_every_switch_to_switch_link_and_latency_every_link(text):
    topo = build_topology(f"{text},latency=2.5us,spine_gbps=800")
    spine = _switch_links(topo)
    assert spine.any() and np.all(topo.capacity_Bps[spine] == SPINE_Bps)
    assert np.all(topo.capacity_Bps[~spine] == HOST_Bps) and topo.line_rate_Bps == HOST_Bps
    assert topo.latency_s == pytest.approx(np.full(topo.links, 2.5e-6))
    plain = build_topology(text)
    assert np.all(plain.capacity_Bps[_switch_links(plain)] != SPINE_Bps) and not np.allclose(plain.latency_s, 2.5e-6)


def test_latency_units_and_the_scale_up_builders():
    assert np.all(build_topology("fat-tree:k=4,latency=500ns").latency_s == pytest.approx(5e-7))
    assert np.all(build_topology("fat-tree:k=4,latency=0.000001").latency_s == 1e-6)  # bare number: seconds
    assert np.all(build_topology("nvswitch:gpus=4,latency=1us").latency_s == 1e-6)
    nvl = build_topology("nvl72:latency=3us")
    assert np.all(nvl.latency_s == 3e-6) and nvl.line_rate_Bps == build_topology("nvl72").line_rate_Bps


def test_leaf_spine_spine_gbps_gives_the_uplink_capacity_and_the_oversubscription():
    topo = build_topology("leaf-spine:leaves=4,spines=2,hosts_per_leaf=16,gbps=400,spine_gbps=800")
    assert topo.meta["oversubscription"] == pytest.approx(16 * 400 / (2 * 800))  # 4:1
    assert np.all(topo.capacity_Bps[_switch_links(topo)] == SPINE_Bps)


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("fat-tree:k=4,latency=fast", "latency", "cannot parse duration"),
        ("fat-tree:k=4,latency=0us", "latency", "positive"),
        ("fat-tree:k=4,spine_gbps=0", "spine_gbps", "positive"),
        ("torus:dims=4x4,spine_gbps=nan", "spine_gbps", "finite"),
        ("leaf-spine:leaves=2,spines=2,hosts_per_leaf=4,spine_gbps=800,oversubscription=2", "spine_gbps", "not both"),
        ("fat-tree:k=4,latncy=1us", "topology", "fat-tree has no parameter 'latncy'"),
        ("nvswitch:spine_gbps=800", "topology", "nvswitch has no parameter 'spine_gbps'"),
        ("dgx-h100:gpus=16,latency=1us", "topology", "dgx-h100 has no parameter 'latency'"),
    ],
)
def test_bad_latency_and_spine_values_name_the_key(text, field, message):
    with pytest.raises(FabricsimError, match=message) as info:
        build_topology(text)
    # the error names the topology option; the key it is about leads its message (dims: ...)
    assert info.value.field == "topology" and (field == "topology" or f" {field}: " in info.value.problem)
    assert "\n" not in str(info.value)


def _gbps(topo, links) -> set[float]:
    return set((topo.capacity_Bps[links] * 8 / 1e9).round(6).tolist())


def test_core_gbps_sets_a_three_tier_clos_apart_from_its_edge_aggregation_links():
    # issue 26 item 5: per-tier rates; a fat-tree's tiers are host-edge, edge-aggregation, aggregation-core
    topo = build_topology("fat-tree:k=4,leaf_gbps=100,spine_gbps=200,core_gbps=400,latency=1us")
    host = _host_links(topo)
    assert _gbps(topo, host) == {100.0} and topo.line_rate_Bps == 100e9 / 8
    assert _gbps(topo, ~host) == {200.0, 400.0}
    assert np.count_nonzero(topo.capacity_Bps == 400e9 / 8) == np.count_nonzero(topo.capacity_Bps == 200e9 / 8)
    assert np.all(topo.latency_s == 1e-6)
    assert _gbps(build_topology("fat-tree:k=4,spine_gbps=200"), ~host) == {200.0}  # core defaults to spine
    rail = build_topology("rail-optimized:nodes=64,rails=2,radix=8,core_gbps=800")  # 3 tiers at this size
    assert _gbps(rail, ~_host_links(rail)) == {400.0, 800.0}


def test_global_gbps_sets_a_dragonflys_global_links_apart_from_its_local_ones():
    topo = build_topology("dragonfly:a=2,p=2,h=1,spine_gbps=200,global_gbps=800")
    routers = ~_host_links(topo)
    # 3 groups: one local pair each and one global link per group pair, 2 directions each
    assert np.count_nonzero(topo.capacity_Bps[routers] == 200e9 / 8) == 6
    assert np.count_nonzero(topo.capacity_Bps[routers] == 800e9 / 8) == 6


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("leaf-spine:leaves=2,spines=2,hosts_per_leaf=4,core_gbps=800", "topology", "no parameter 'core_gbps'"),
        ("rail-optimized:nodes=4,rails=2,radix=8,core_gbps=800", "core_gbps", "two tiers"),
        ("fat-tree:k=4,gbps=100,leaf_gbps=200", "leaf_gbps", "another name of gbps"),
        ("fat-tree:k=4,core_gbps=-1", "core_gbps", "positive"),
        ("dragonfly:a=2,p=2,h=1,global_gbps=nan", "global_gbps", "finite"),
        ("torus:dims=4x4,global_gbps=800", "topology", "no parameter 'global_gbps'"),
    ],
)
def test_bad_tier_keys_name_the_key(text, field, message):
    with pytest.raises(FabricsimError, match=message) as info:
        build_topology(text)
    # the error names the topology option; the key it is about leads its message (dims: ...)
    assert info.value.field == "topology" and (field == "topology" or f" {field}: " in info.value.problem)
    assert "\n" not in str(info.value)


def _host_links(topo) -> np.ndarray:
    kinds = topo.node_kind
    return (kinds[topo.link_src] == NodeKind.GPU) | (kinds[topo.link_dst] == NodeKind.GPU)
