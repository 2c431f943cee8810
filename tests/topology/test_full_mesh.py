"""A full-mesh scale-up domain in the topology (issue 25): a link per GPU pair per direction at the
pair's bandwidth, no switch inside the node, so flow and packet fidelities see the mesh."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.specs import ScaleUpSpec, SystemSpec
from fabricsim.topology.graph import NodeKind
from fabricsim.topology.inventory import count_inventory
from fabricsim.topology.placement import tier_map
from fabricsim.topology.system import build_system_topology

MI300X = catalog.load_system("mi300x-8")


def _gpu_links(topo):
    gpu = topo.node_kind == NodeKind.GPU
    both = gpu[topo.link_src] & gpu[topo.link_dst]
    return topo.link_src[both], topo.link_dst[both], topo.capacity_Bps[both]


def test_one_node_is_a_full_mesh_with_no_switch() -> None:
    topo = build_system_topology(MI300X, 8)
    assert not np.any(topo.node_kind == NodeKind.SWITCH)
    src, dst, cap = _gpu_links(topo)
    pairs = set(zip(src.tolist(), dst.tolist(), strict=True))
    assert pairs == {(a, b) for a in range(8) for b in range(8) if a != b}  # 56 directed links
    assert np.allclose(cap, catalog.load_link("infinity-fabric-mi300").bandwidth_Bps)


def test_two_nodes_keep_a_mesh_each_and_no_gpu_link_between_them() -> None:
    topo = build_system_topology(MI300X, 16)
    src, dst, _ = _gpu_links(topo)
    assert len(src) == 2 * 56
    assert np.all(src // 8 == dst // 8)


def test_a_partial_node_has_the_links_among_its_gpus() -> None:
    src, _, cap = _gpu_links(build_system_topology(catalog.load_system("gaudi3-8"), 4))
    assert len(src) == 4 * 3 and np.allclose(cap, 3 * catalog.load_link("roce-200").bandwidth_Bps)


def test_a_full_mesh_has_no_switch() -> None:
    link = catalog.load_link("infinity-fabric-mi300")
    switch = catalog.load_switch("nvswitch-gen3")
    with pytest.raises(ValueError, match="no switch"):
        ScaleUpSpec(domain_gpus=8, link=link, bandwidth_Bps=448e9, switch=switch, topology="full-mesh")


def test_gpus_of_one_mesh_node_talk_over_the_scale_up_tier() -> None:
    """Without a switch a node's GPUs are still one scale-up domain for the tier map (traffic
    accounting of the network in the loop) and their cables count as scale-up cables."""
    topo = build_system_topology(MI300X, 16)
    tiers = tier_map(topo)
    src, dst = np.divmod(np.arange(256), 16)
    tier = tiers(src, dst)
    assert np.all((tier == 0) == (src // 8 == dst // 8))
    assert dict(count_inventory(topo).cables)["scale-up"] == 2 * 28


def test_rail_only_is_refused_on_a_mesh() -> None:
    """rail-only forwards cross-rail traffic through the node's scale-up switch; a mesh has none."""
    data = MI300X.model_dump()
    data["scale_out"]["topology"] = "rail-only"
    with pytest.raises(ValueError, match="rail-only"):
        SystemSpec.model_validate(data)
