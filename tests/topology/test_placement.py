"""Rank placement (packed, spread, random, file) and the tier a pair of endpoints crosses."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.api.topologies import build_topology
from fabricsim.engine.fabric_loop import tiled_groups
from fabricsim.errors import FabricsimError
from fabricsim.topology.graph import GraphBuilder, NodeKind, Topology
from fabricsim.topology.inventory import switch_tiers
from fabricsim.topology.placement import (
    PLACEMENT_HELP,
    TIERS,
    PlacementKind,
    PlacementPolicy,
    leaf_groups,
    pair_tiers,
    parse_placement,
    place,
    tier_bytes,
    tier_map,
)
from fabricsim.topology.routing import FlowEnds, Routing, route, route_table
from fabricsim.topology.system import build_system_topology

PACKED, SPREAD = parse_placement("packed"), parse_placement("spread")


def _system(name: str = "dgx-h100", **scale_out: object):
    system = catalog.load_system(name)
    if scale_out:
        system = system.model_copy(update={"scale_out": system.scale_out.model_copy(update=scale_out)})
    return system


@pytest.fixture(scope="module")
def h100_1024() -> Topology:
    return build_system_topology(_system(), 1024)


def _one_line_error(excinfo: pytest.ExceptionInfo[FabricsimError]) -> str:
    text = str(excinfo.value)
    assert excinfo.value.field == "placement" and "\n" not in text and excinfo.value.fix
    return text


# ---------------------------------------------------------------- parsing


def test_parse_names_seeds_and_keeps_the_users_text() -> None:
    assert parse_placement(" Packed ") == PlacementPolicy(PlacementKind.PACKED, text="Packed")
    assert parse_placement("spread").kind == "spread"
    policy = parse_placement("random:42")
    assert (policy.kind, policy.seed, policy.hosts, policy.text) == ("random", 42, None, "random:42")
    assert "\n" not in PLACEMENT_HELP and "random:SEED" in PLACEMENT_HELP


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("pakced", "did you mean packed"),
        ("random", "seed"),
        ("random:", "seed"),
        ("random:-1", "seed"),
        ("random:1.5", "seed"),
        ("random:9223372036854775808", "seed"),  # 2^63
    ],
)
def test_bad_text_is_one_line_naming_placement(text: str, says: str) -> None:
    with pytest.raises(FabricsimError) as excinfo:
        parse_placement(text)
    assert says in _one_line_error(excinfo)


def test_file_lists_one_endpoint_per_rank_with_comments(tmp_path) -> None:
    path = tmp_path / "ranks.txt"
    path.write_text("# rank -> endpoint\n3 2\n1   # third\n\n0\t7\n")
    policy = parse_placement(str(path))
    assert (policy.kind, policy.hosts, policy.text) == ("file", (3, 2, 1, 0, 7), str(path))


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("1 2 x\n", "line 1: 'x' is not an endpoint index"),
        ("0\n-1\n", "'-1'"),
        ("1\n2 1\n", "endpoint 1 is given to ranks 0 and 2"),
        ("# nothing\n", "lists no endpoint"),
        ("\uff11\n", "not an endpoint index"),  # a full-width digit one: int() would take it
        ("9" * 19, "not an endpoint index"),
    ],
)
def test_bad_file_is_one_line_naming_placement(tmp_path, content: str, says: str) -> None:
    path = tmp_path / "ranks.txt"
    path.write_text(content)
    with pytest.raises(FabricsimError) as excinfo:
        parse_placement(str(path))
    assert says in _one_line_error(excinfo)


def test_a_directory_is_not_a_placement_file(tmp_path) -> None:
    with pytest.raises(FabricsimError, match=r"^placement: .* is a directory"):
        parse_placement(str(tmp_path))


# ---------------------------------------------------------------- leaf groups


def test_a_rail_optimized_scalable_unit_is_one_leaf_group(h100_1024: Topology) -> None:
    """DGX SuperPOD H100: a scalable unit of 32 nodes shares its 8 rail leaves (radix 64: 32 down)."""
    group = leaf_groups(h100_1024, 8)
    np.testing.assert_array_equal(group, np.arange(128) // 32)
    leaves = tier_map(h100_1024).leaf[:, 0].reshape(128, 8)  # rail r of node n
    assert all(np.unique(leaves[group == g], axis=0).shape[0] == 1 for g in range(4))  # one set per unit
    assert np.unique(leaves).size == 32  # 4 units x 8 rails, no leaf shared between units


def test_builder_groups_are_the_hosts_of_one_leaf() -> None:
    topo = build_topology("leaf-spine:leaves=4,spines=2,hosts_per_leaf=4")
    np.testing.assert_array_equal(leaf_groups(topo, 1), np.arange(16) // 4)
    np.testing.assert_array_equal(leaf_groups(topo, 2), np.arange(8) // 2)


def test_packed_fills_a_pod_before_the_next_whatever_the_node_numbering() -> None:
    """Hosts 0 and 2 hang under pod A, 1 and 3 under pod B (leaves -> one aggregation switch per
    pod -> a core): packed takes pod A's leaves first, so a 2-host job never needs the core."""
    graph = GraphBuilder()
    hosts = graph.add_nodes(4, NodeKind.GPU)
    leaves = graph.add_nodes(4, NodeKind.SWITCH)
    aggs = graph.add_nodes(2, NodeKind.SWITCH)
    core = graph.add_nodes(1, NodeKind.SWITCH)
    graph.connect(hosts, leaves, 1e9, 1e-6)
    graph.connect(leaves, aggs[[0, 1, 0, 1]], 1e9, 1e-6)
    graph.connect(aggs, core, 1e9, 1e-6)
    topo = graph.build("interleaved-pods", hosts, 1e9)
    np.testing.assert_array_equal(leaf_groups(topo, 1), [0, 2, 1, 3])
    packed = place(topo, 2, 1, PACKED).host_of_gpu
    np.testing.assert_array_equal(packed, [0, 2])
    assert TIERS[pair_tiers(topo, packed[:1], packed[1:])[0]] == "spine"
    assert TIERS[pair_tiers(topo, np.array([0]), np.array([1]))[0]] == "core"


# ---------------------------------------------------------------- policies


def test_packed_fills_a_group_and_spread_deals_round_robin(h100_1024: Topology) -> None:
    packed = place(h100_1024, 40 * 8, 8, PACKED)
    np.testing.assert_array_equal(packed.nodes, np.arange(40))
    np.testing.assert_array_equal(packed.host_of_gpu, np.arange(320))
    spread = place(h100_1024, 6 * 8, 8, SPREAD)
    np.testing.assert_array_equal(spread.nodes, [0, 32, 64, 96, 1, 33])
    np.testing.assert_array_equal(spread.host_of_gpu[8:16], np.arange(256, 264))  # a node keeps its GPU order
    assert spread.policy == "spread" and spread.host_of_gpu.dtype == np.int64


def test_builder_topology_places_hosts() -> None:
    topo = build_topology("leaf-spine:leaves=4,spines=2,hosts_per_leaf=4")
    np.testing.assert_array_equal(place(topo, 6, 1, PACKED).host_of_gpu, [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(place(topo, 6, 1, SPREAD).host_of_gpu, [0, 4, 8, 12, 1, 5])


def test_a_partial_node_takes_its_first_gpus(h100_1024: Topology) -> None:
    placed = place(h100_1024, 12, 8, PACKED)
    np.testing.assert_array_equal(placed.nodes, [0, 1])
    np.testing.assert_array_equal(placed.host_of_gpu, np.arange(12))


def test_random_is_a_seeded_permutation_of_the_free_nodes(h100_1024: Topology) -> None:
    free = np.arange(100, 20, -1)  # any order: sorted before the permutation
    first = place(h100_1024, 64, 8, parse_placement("random:7"), free)
    again = place(h100_1024, 64, 8, parse_placement("random:7"), free[::-1].copy())
    np.testing.assert_array_equal(first.nodes, again.nodes)
    np.testing.assert_array_equal(first.nodes, np.random.default_rng(7).permutation(np.arange(21, 101))[:8])
    other = place(h100_1024, 64, 8, parse_placement("random:8"), free)
    assert not np.array_equal(first.nodes, other.nodes)


def test_free_nodes_restrict_every_policy(h100_1024: Topology) -> None:
    taken = place(h100_1024, 20 * 8, 8, PACKED)  # the first job: nodes 0..19
    free = np.setdiff1d(np.arange(128), taken.nodes)
    second = place(h100_1024, 20 * 8, 8, PACKED, free)
    np.testing.assert_array_equal(second.nodes, np.r_[20:32, 32:40])  # fills unit 0, then unit 1
    spread = place(h100_1024, 5 * 8, 8, SPREAD, free)
    np.testing.assert_array_equal(spread.nodes, [20, 32, 64, 96, 21])
    for policy in (PACKED, SPREAD, parse_placement("random:1")):
        assert not np.isin(place(h100_1024, 100 * 8, 8, policy, free).nodes, taken.nodes).any()


@pytest.mark.parametrize("free", [[3, 3], [0, 128], [-1], [[1, 2]], [0.5]])
def test_bad_free_nodes_are_refused(h100_1024: Topology, free: list) -> None:
    with pytest.raises(FabricsimError) as excinfo:
        place(h100_1024, 8, 8, PACKED, np.array(free))
    assert excinfo.value.field == "placement"


def test_too_few_free_nodes_is_one_line(h100_1024: Topology) -> None:
    with pytest.raises(FabricsimError) as excinfo:
        place(h100_1024, 64, 8, SPREAD, np.arange(7))
    assert "needs 8 nodes of 8 GPUs but 7 of the fabric's 128 are free" in _one_line_error(excinfo)
    with pytest.raises(FabricsimError, match="2048 GPUs exceed the fabric's 1024 endpoints"):
        place(h100_1024, 2048, 8, PACKED)
    with pytest.raises(FabricsimError, match="16 endpoints are not whole nodes of 3 GPUs"):
        place(build_topology("leaf-spine:leaves=4,spines=2,hosts_per_leaf=4"), 3, 3, PACKED)
    with pytest.raises(FabricsimError, match=r"^gpus: must be a positive integer"):
        place(h100_1024, 0, 8, PACKED)


def test_file_placement_is_checked_against_job_and_fabric(tmp_path, h100_1024: Topology) -> None:
    path = tmp_path / "ranks.txt"
    path.write_text("17 16 3 900")
    placed = place(h100_1024, 4, 8, parse_placement(str(path)))
    np.testing.assert_array_equal(placed.host_of_gpu, [17, 16, 3, 900])
    np.testing.assert_array_equal(placed.nodes, [2, 0, 112])  # job order of first use
    cases = ((3, None, "gives 4 endpoints for 3 GPU ranks"), (4, np.arange(1, 128), "3 is on node 0, not free"))
    for gpus, free, says in cases:
        with pytest.raises(FabricsimError) as excinfo:
            place(h100_1024, gpus, 8, parse_placement(str(path)), free)
        assert says in _one_line_error(excinfo)
    path.write_text("0 1024")
    with pytest.raises(FabricsimError) as excinfo:
        place(h100_1024, 2, 8, parse_placement(str(path)))
    assert "rank 1's endpoint 1024 is not one of the fabric's 1024" in _one_line_error(excinfo)


def test_same_inputs_same_placement_and_results_are_read_only(h100_1024: Topology) -> None:
    for text in ("packed", "spread", "random:3"):
        a, b = (place(h100_1024, 256, 8, parse_placement(text)) for _ in range(2))
        np.testing.assert_array_equal(a.host_of_gpu, b.host_of_gpu)
        assert np.unique(a.host_of_gpu).size == 256 and not a.host_of_gpu.flags.writeable


def test_megatron_dp_groups_stay_under_fewer_leaves_packed_than_spread() -> None:
    """GPT-3-like layout tp 8, pp 8, dp 16 on 1,024 H100 under a 4:1 leaf-spine: Megatron-Core's rank
    order (TP innermost, DP at stride tp·cp = 8, PP outermost) gives the DP groups of
    :func:`tiled_groups`; packed keeps each group under few leaves, spread scatters it over the spines."""
    topo = build_system_topology(_system(topology="leaf-spine", oversubscription=4.0), 1024)
    dp_groups = tiled_groups(1024, 16, 8)
    leaf = tier_map(topo).leaf
    leaves, spine = {}, {}
    for policy in (PACKED, SPREAD):
        hosts = place(topo, 1024, 8, policy).host_of_gpu[dp_groups]  # [groups, ranks] endpoints
        leaves[policy.kind] = np.mean([np.unique(leaf[group]).size for group in hosts])
        ring = tier_bytes(topo, hosts.ravel(), np.roll(hosts, -1, axis=1).ravel(), 1.0)
        spine[policy.kind] = ring["spine"] + ring["core"]
    assert leaves["packed"] < leaves["spread"]
    assert spine["packed"] < spine["spread"]


# ---------------------------------------------------------------- tiers


def _routed_tiers(topo: Topology, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Reference: route the pairs (ECMP) and read the highest switch tier on each path (a tree), or
    count its switches capped at 3 (a fabric with peer cables)."""
    ends = np.stack([topo.link_src, topo.link_dst], axis=1).astype(np.int64)
    tier = switch_tiers(topo, ends)
    zeros = np.zeros(src.size)
    routes = route(route_table(topo), FlowEnds(src, dst, zeros, zeros.astype(np.int64)), Routing.ECMP, 0)
    link, flow = routes.incidence.nonzero()
    switch = topo.node_kind[topo.link_dst[link]] == NodeKind.SWITCH
    if "dims" in topo.meta or "groups" in topo.meta:  # torus, dragonfly
        return np.minimum(np.bincount(flow[switch], minlength=src.size), 3)
    out = np.zeros(src.size, dtype=np.int64)
    np.maximum.at(out, flow[switch], tier[topo.link_dst[link[switch]]])
    return out


@pytest.mark.parametrize(
    "make",
    [
        lambda: build_topology("fat-tree:k=8"),
        lambda: build_topology("leaf-spine:leaves=8,spines=4,hosts_per_leaf=8,oversubscription=2"),
        lambda: build_topology("dragonfly:a=4,p=2,h=2"),
        lambda: build_topology("torus:dims=4x4x2"),
        lambda: build_system_topology(_system(switch=_system().scale_out.switch.model_copy(update={"radix": 16})), 256),
        lambda: build_system_topology(_system("gb200-nvl72"), 144),
        lambda: build_system_topology(_system(topology="leaf-spine", oversubscription=4.0), 256),
    ],
)
def test_pair_tiers_match_the_routed_paths(make) -> None:
    topo = make()
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, topo.hosts, 3000), rng.integers(0, topo.hosts, 3000)
    src[:50] = dst[:50]  # a flow to itself crosses nothing
    got = pair_tiers(topo, src, dst)
    np.testing.assert_array_equal(got, _routed_tiers(topo, src, dst))
    assert np.unique(got).size >= 3 and got.dtype == np.int64  # the sample reaches several tiers


def test_system_tiers_by_name(h100_1024: Topology) -> None:
    small_radix = _system(switch=_system().scale_out.switch.model_copy(update={"radix": 16}))
    # radix 16: units of 8 nodes, 4 units x 8 rails = 32 leaves > 16, so 3 tiers, a pod (8 leaves) per unit
    three_tier = build_system_topology(small_radix, 256)
    src = np.zeros(5, dtype=np.int64)
    dst = np.array([1, 8, 9, 64, 255])  # NVLink, same rail and unit, other rail, other unit (pod)
    assert [TIERS[t] for t in pair_tiers(three_tier, src, dst)] == ["scale-up", "leaf", "spine", "core", "core"]
    # 2 tiers (32 leaves <= radix 64): another unit is a spine away, never a core
    assert [TIERS[t] for t in pair_tiers(h100_1024, src[:3], np.array([16, 256, 1023]))] == ["leaf", "spine", "spine"]


def test_tier_bytes_counts_every_tier_and_skips_self_flows() -> None:
    topo = build_topology("fat-tree:k=4")  # 16 hosts, 2 per edge switch, 4 per pod
    got = tier_bytes(topo, np.array([0, 0, 0, 5]), np.array([1, 2, 8, 5]), np.array([1.0, 2.0, 4.0, 8.0]))
    assert got == {"scale-up": 0.0, "leaf": 1.0, "spine": 2.0, "core": 4.0}
    assert list(tier_bytes(topo, np.array([0]), np.array([4]), 3.0)) == list(TIERS)


def test_tier_map_is_cached_per_topology_and_scales(h100_1024: Topology) -> None:
    assert tier_map(h100_1024) is tier_map(h100_1024)
    big = build_system_topology(_system(), 8192)
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 8192, 100_000), rng.integers(0, 8192, 100_000)
    tiers = pair_tiers(big, src, dst)  # vectorised: ~5 ms here (not asserted)
    assert tiers.shape == (100_000,) and np.all(tiers[(src // 8) == (dst // 8)] == 0)
    with pytest.raises(ValueError, match="endpoint indices"):
        pair_tiers(big, np.array([-1]), np.array([0]))
