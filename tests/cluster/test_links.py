"""Links by switch tier and their load (cluster/links.py) on the builders' fabrics and a system's."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.api.topologies import build_topology
from fabricsim.cluster.links import NO_TIER, TIERS, link_tiers, tier_loads
from fabricsim.topology.graph import NodeKind
from fabricsim.topology.system import build_system_topology


def counts(topology) -> dict[str, int]:
    tiers = link_tiers(topology)
    return {name: int(np.sum(tiers == index)) for index, name in enumerate(TIERS) if np.any(tiers == index)} | (
        {"none": int(np.sum(tiers == NO_TIER))} if np.any(tiers == NO_TIER) else {})


def test_leaf_spine_has_host_links_at_the_leaf_and_uplinks_at_the_spine():
    topology = build_topology("leaf-spine:leaves=4,spines=2,hosts_per_leaf=4")
    assert counts(topology) == {"leaf": 2 * 16, "spine": 2 * 4 * 2}  # directed: two per cable


def test_a_three_tier_fat_tree_has_core_links():
    """k=4: 16 hosts, 8 edge, 8 aggregation, 4 core switches; 16 cables per tier."""
    assert counts(build_topology("fat-tree:k=4")) == {"leaf": 32, "spine": 32, "core": 32}


def test_a_system_has_scale_up_links_and_host_links_of_no_tier():
    """dgx-h100, 8 nodes: every GPU to its NVSwitch (scale-up), GPU to NIC (no switch: none), NIC to
    its rail leaf (leaf), leaves to spines (spine)."""
    topology = build_system_topology(catalog.load_system("dgx-h100"), 64)
    found = counts(topology)
    assert found["scale-up"] == 2 * 64 and found["none"] == 2 * 64 and found["leaf"] == 2 * 64
    assert found["spine"] > 0 and "core" not in found
    tiers = link_tiers(topology)
    gpu_to_switch = (topology.node_kind[topology.link_src] == NodeKind.GPU) & (
        topology.node_kind[topology.link_dst] == NodeKind.SWITCH)
    assert set(tiers[gpu_to_switch].tolist()) == {0}


@pytest.mark.parametrize("fabric", ["dragonfly:a=4,p=2,h=2", "torus:dims=4x4"])
def test_switch_links_of_a_fabric_that_is_not_a_tree_count_as_spine(fabric):
    topology = build_topology(fabric)
    tiers = link_tiers(topology)
    switch = topology.node_kind == NodeKind.SWITCH
    between = switch[topology.link_src] & switch[topology.link_dst]
    assert set(tiers[between].tolist()) == {2} and set(tiers[~between].tolist()) == {1}


def test_tier_loads_are_each_jobs_rate_over_capacity():
    """Two jobs: job 0 puts 1 s x capacity on one leaf link per 2 s step (half busy), job 1 fills
    another leaf link in its 1 s step (fully busy) and adds a quarter on the first."""
    topology = build_topology("leaf-spine:leaves=2,spines=1,hosts_per_leaf=2")
    tiers = link_tiers(topology)
    leaf = np.flatnonzero(tiers == 1)
    capacity = topology.capacity_Bps
    step_bytes = np.zeros((2, topology.links))
    step_bytes[0, leaf[0]] = capacity[leaf[0]] * 1.0
    step_bytes[1, leaf[1]] = capacity[leaf[1]] * 1.0
    step_bytes[1, leaf[0]] = capacity[leaf[0]] * 0.25
    loads = {load.tier: load for load in tier_loads(topology, step_bytes, np.array([2.0, 1.0]))}
    assert loads["leaf"].max_utilization == pytest.approx(1.0)
    assert loads["leaf"].mean_utilization == pytest.approx((0.5 + 0.25 + 1.0) / leaf.size)
    assert loads["leaf"].bytes == pytest.approx(step_bytes.sum())
    assert loads["spine"].max_utilization == 0.0 and loads["spine"].bytes == 0.0
