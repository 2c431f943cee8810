"""Component counts of built topologies against closed forms and NVIDIA's SuperPOD tables."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

from fabricsim import catalog
from fabricsim.errors import FabricsimError
from fabricsim.topology.builders import LinkParams, RailSpec, dragonfly, fat_tree, rail_optimized, torus
from fabricsim.topology.inventory import count_inventory
from fabricsim.topology.rail_only import rail_only
from fabricsim.topology.system import build_system_topology

LINK = LinkParams(50e9, 1e-6)


@pytest.mark.parametrize(("a", "p", "h"), [(16, 8, 8), (4, 2, 2), (8, 4, 4), (6, 3, 1)])
def test_dragonfly_counts_match_kim_et_al(a, p, h):
    inv = count_inventory(dragonfly(a, p, h, LINK))
    groups = a * h + 1
    assert inv.switches_by_tier == (groups * a,)
    assert inv.endpoints == a * p * groups
    assert inv.cable_count("global") == groups * a * h // 2
    assert inv.cable_count("local") == groups * a * (a - 1) // 2
    assert inv.cable_count("access") == inv.endpoints


def test_dragonfly_reference_example():
    """a=16, p=8, h=8: 129 groups, 16,512 hosts, 8,256 global cables (Kim et al., ISCA'08)."""
    inv = count_inventory(dragonfly(16, 8, 8, LINK))
    assert inv.switches // 16 == 129
    assert inv.endpoints == 16_512
    assert inv.cable_count("global") == 8_256


@pytest.mark.parametrize("k", [4, 8, 16])
def test_k_ary_fat_tree_counts(k):
    inv = count_inventory(fat_tree(k, LINK), radix=k)
    assert inv.switches == 5 * k * k // 4
    assert inv.switches_by_tier == (k * k // 2, k * k // 2, k * k // 4)
    assert inv.endpoints == k**3 // 4
    assert dict(inv.cables) == {"access": k**3 // 4, "tier1-2": k**3 // 4, "tier2-3": k**3 // 4}
    assert inv.ports_by_tier == (k * k * k // 2, k * k * k // 2, k * k * k // 4)


# NVIDIA DGX SuperPOD B200 reference architecture, larger-configuration table: SU count ->
# (leaf, spine, core) switches; 32 DGX (8 rails of 400G NDR, QM9700 64 ports) per SU.
SUPERPOD = {2: (16, 8), 4: (32, 16), 8: (64, 32), 16: (128, 128, 64), 32: (256, 256, 128)}


@pytest.mark.parametrize(("units", "switches"), sorted(SUPERPOD.items()))
def test_rail_optimized_matches_superpod_reference_architecture(units, switches):
    nodes = 32 * units
    inv = count_inventory(rail_optimized(RailSpec(nodes, 8, 64, LINK)), radix=64)
    assert inv.switches_by_tier == switches
    gpus = 8 * nodes
    assert all(count == gpus for _, count in inv.cables)  # node-leaf, leaf-spine, spine-core: one per GPU


def test_rail_only_rails_are_disconnected():
    topo = rail_only(RailSpec(64, 8, 16, LINK))
    graph = sp.csr_matrix((np.ones(topo.links), (topo.link_src, topo.link_dst)), shape=(topo.nodes,) * 2)
    count, _ = csgraph.connected_components(graph, directed=False)
    assert count == 8
    assert topo.hosts == 64 * 8


def test_rail_only_rail_that_fits_one_switch_is_one_switch():
    inv = count_inventory(rail_only(RailSpec(64, 8, 64, LINK)), radix=64)
    assert inv.switches_by_tier == (8,) and dict(inv.cables) == {"access": 512}
    bigger = count_inventory(rail_only(RailSpec(128, 8, 64, LINK)), radix=64)
    assert bigger.switches_by_tier == (32, 16)  # per rail: 4 leaves, 128 uplinks -> 2 spines


def test_system_topology_counts_scale_up_and_host_links():
    system = catalog.load_system("dgx-h100")
    inv = count_inventory(build_system_topology(system, 256), radix=64)
    assert inv.gpus == 256 and inv.nics == 256
    assert inv.scale_up_switches == 32  # one merged NVSwitch node per DGX
    assert inv.cable_count("host") == 256 and inv.cable_count("scale-up") == 256
    assert inv.cable_count("access") == 256
    assert inv.switches_by_tier == (8, 4)  # one SU: 8 rail leaves, 4 spines


def test_torus_cables_are_peer_links():
    inv = count_inventory(torus((4, 4, 4), LINK))
    assert inv.cable_count("peer") == 3 * 64
    assert inv.switches_by_tier == (64,)


def test_bad_radix_is_a_user_error():
    with pytest.raises(FabricsimError) as info:
        count_inventory(fat_tree(4, LINK), radix=0)
    assert info.value.field == "radix"


def test_a_dgx_h100_cluster():
    """2,048 nodes: 8 NICs each; 64-port leaves split 32 down / 32 up; a 3-tier Clos above."""
    counted = count_inventory(build_system_topology(catalog.load_system("dgx-h100"), 16384))
    assert counted.endpoints == 16384 and counted.nics == 16384
    assert counted.scale_up_switches == 2048  # one merged NVSwitch node per 8-GPU domain
    assert counted.cable_count("host") == 16384 and counted.cable_count("access") == 16384
    leaves = 16384 // 32
    assert counted.switch_nodes_by_tier == (leaves, leaves, 32 * 32)  # leaves, aggregation, core
    assert counted.cable_count("tier1-2") + counted.cable_count("tier2-3") == 2 * leaves * 32


def test_one_node_has_no_scale_out():
    counted = count_inventory(build_system_topology(catalog.load_system("dgx-h100"), 8))
    assert counted.nics == 0 and counted.switches == 0
    assert {kind for kind, _ in counted.cables} <= {"scale-up"}
