"""Component counts of built topologies: switches, NICs and cables by what they join."""

from __future__ import annotations

import pytest

from fabricsim import catalog
from fabricsim.topology.builders import LinkParams, dragonfly, fat_tree, leaf_spine, torus
from fabricsim.topology.inventory import inventory
from fabricsim.topology.system import build_system_topology

LINK = LinkParams(50e9, 1e-6)


@pytest.mark.parametrize("k", [4, 8, 16])
def test_fat_tree_counts_are_al_fares(k):
    counted = inventory(fat_tree(k, LINK))
    assert counted.endpoints == k**3 // 4
    assert counted.switches == 5 * k**2 // 4  # k^2 edge+aggregation, k^2/4 core
    assert counted.edge_switches == k**2 // 2
    assert counted.endpoint_switch_cables == k**3 // 4
    assert counted.switch_switch_cables == k**3 // 2  # k^3/4 edge-agg + k^3/4 agg-core
    assert counted.nics == 0


def test_leaf_spine_dragonfly_and_torus():
    assert inventory(leaf_spine(16, 8, 16, LINK)).switch_switch_cables == 16 * 8
    fly = inventory(dragonfly(4, 2, 2, LINK))  # 9 groups of 4 routers
    assert fly.switches == 36 and fly.switch_switch_cables == 9 * 6 + 9 * 8 // 2
    ring = inventory(torus((4, 4), LINK))
    assert ring.switches == 16 and ring.switch_switch_cables == 32


def test_a_dgx_h100_cluster():
    """2,048 nodes: 8 NICs each; 64-port leaves split 32 down / 32 up; a 3-tier Clos above."""
    counted = inventory(build_system_topology(catalog.load_system("dgx-h100"), 16384))
    assert counted.endpoints == 16384 and counted.nics == 16384
    assert counted.edge_switches == 2048  # one merged NVSwitch node per 8-GPU domain
    assert counted.endpoint_nic_links == 16384 and counted.nic_switch_cables == 16384
    leaves = 16384 // 32
    assert counted.fabric_switches == leaves + leaves + 32 * 32  # leaves, aggregation, core
    assert counted.switch_switch_cables == 2 * leaves * 32


def test_one_node_has_no_scale_out():
    counted = inventory(build_system_topology(catalog.load_system("dgx-h100"), 8))
    assert counted.nics == 0 and counted.fabric_switches == 0 and counted.switch_switch_cables == 0
