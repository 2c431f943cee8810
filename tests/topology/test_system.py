"""``build_system_topology``: every ``scale_out.topology`` kind built as written (issue 23), and a
builder's network (``fabric=``) in place of the system's scale-out network."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.api.network_collective import NetworkCollectiveSpec, network_collective
from fabricsim.api.topologies import build_topology
from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.topology.graph import NodeKind, cables
from fabricsim.topology.routing import route_table, unroutable
from fabricsim.topology.system import build_system_topology

H100 = catalog.load_system("dgx-h100")
NIC_Bps = H100.scale_out.nic.bandwidth_Bps


def _system_file(tmp_path, kind: str, params: str | None = None) -> str:
    """The catalog dgx-h100 YAML with ``topology: kind`` (and ``topology_params``)."""
    text = (catalog.data_root() / "systems" / "dgx-h100.yaml").read_text()
    assert "  topology: rail-optimized\n" in text
    extra = f"  topology_params: \"{params}\"\n" if params else ""
    path = tmp_path / f"{kind}-{abs(hash(params))}.yaml"
    path.write_text(text.replace("  topology: rail-optimized\n", f"  topology: {kind}\n{extra}"))
    return str(path)


def _system(tmp_path, kind: str, params: str | None = None):
    return catalog.load_system(_system_file(tmp_path, kind, params))


def _count(topo, kind):
    return int((topo.node_kind == kind).sum())


def _cable_ends(topo):
    pairs = cables(topo)[:, 0]
    return topo.link_src[pairs], topo.link_dst[pairs]


def _routers(topo):
    """The scale-out switches (switches not cabled to a GPU), in node order."""
    scale_up = np.unique(topo.link_dst[topo.node_kind[topo.link_src] == NodeKind.GPU])
    return np.setdiff1d(np.flatnonzero(topo.node_kind == NodeKind.SWITCH), scale_up)


def _gpu_nic_wiring(topo, gpus, rails, per_node):
    """Every NIC cabled to GPU j * per_node / rails of its node, NICs in node-major order."""
    src, dst = _cable_ends(topo)
    gpu_nic = (topo.node_kind[src] == NodeKind.GPU) & (topo.node_kind[dst] == NodeKind.NIC)
    owner = src[gpu_nic][np.argsort(dst[gpu_nic])]
    nodes = gpus // per_node
    expect = (np.arange(nodes)[:, None] * per_node + (np.arange(rails) * per_node) // rails).ravel()
    assert owner.tolist() == expect.tolist()


def test_dragonfly_system_builds_a_dragonfly_with_one_global_link_per_group_pair(tmp_path):
    a, p, h = 4, 2, 2
    groups = a * h + 1
    topo = build_system_topology(_system(tmp_path, "dragonfly", f"a={a},p={p},h={h}"), 64)
    routers = _routers(topo)
    assert routers.size == groups * a
    assert _count(topo, NodeKind.NIC) == 64 and _count(topo, NodeKind.GPU) == 64  # 72 ports, 8 left empty
    assert _count(topo, NodeKind.SWITCH) == groups * a + 8  # routers + one NVSwitch per node
    group = np.full(topo.nodes, -1)
    group[routers] = np.arange(routers.size) // a
    src, dst = _cable_ends(topo)
    router_link = (group[src] >= 0) & (group[dst] >= 0)
    glob = router_link & (group[src] != group[dst])
    assert int((router_link & ~glob).sum()) == groups * a * (a - 1) // 2  # each group fully connected
    pairs = {tuple(sorted(pair)) for pair in zip(group[src[glob]].tolist(), group[dst[glob]].tolist(), strict=True)}
    assert int(glob.sum()) == len(pairs) == groups * (groups - 1) // 2
    assert np.all(topo.capacity_Bps[np.isin(topo.link_src, routers) & np.isin(topo.link_dst, routers)] == NIC_Bps)
    _gpu_nic_wiring(topo, 64, 8, 8)
    # the smallest balanced dragonfly (a = 2p = 2h) with 64 ports is the same shape
    derived = build_system_topology(_system(tmp_path, "dragonfly"), 64)
    assert (derived.nodes, derived.links) == (topo.nodes, topo.links)


def test_torus_system_builds_a_torus_of_the_given_or_a_near_cubic_shape(tmp_path):
    topo = build_system_topology(_system(tmp_path, "torus", "dims=4x4x4"), 64)
    routers = _routers(topo)
    assert routers.size == 64 and _count(topo, NodeKind.NIC) == 64
    src, dst = _cable_ends(topo)
    router_link = np.isin(src, routers) & np.isin(dst, routers)
    assert int(router_link.sum()) == 3 * 64  # one cable per router per dimension
    _gpu_nic_wiring(topo, 64, 8, 8)
    derived = build_system_topology(_system(tmp_path, "torus"), 64)
    assert (derived.nodes, derived.links) == (topo.nodes, topo.links)
    assert _routers(build_system_topology(_system(tmp_path, "torus"), 256)).size == 6 * 7 * 7  # >= 256 ports


def test_flow_all_to_all_on_a_dragonfly_system_is_slower_than_on_a_fat_tree_system(tmp_path):
    """Issue 23: dragonfly and torus systems were built as a plain Clos (all-to-all 5.791 ms for all
    three). The dragonfly's single global link per group pair is the bottleneck of an all-to-all."""
    def all_to_all(path):
        spec = NetworkCollectiveSpec(op="all-to-all", system=path, gpus=64, size="64MiB")
        return network_collective(spec).result.time_s

    fly, tree = all_to_all(_system_file(tmp_path, "dragonfly")), all_to_all(_system_file(tmp_path, "fat-tree"))
    assert fly > 1.2 * tree


def test_leaf_spine_system_is_two_tiers_or_refused(tmp_path):
    system = _system(tmp_path, "leaf-spine")
    topo = build_system_topology(system, 256)  # 256 NICs on 8 leaves of 32 down ports, 32 spines
    nic_up = (topo.node_kind[topo.link_src] == NodeKind.NIC) & (topo.node_kind[topo.link_dst] == NodeKind.SWITCH)
    leaves = np.unique(topo.link_dst[nic_up])
    assert leaves.size == 8 and len(_routers(topo)) == 8 + 32
    leaf_ports = np.isin(topo.link_src, leaves) & ~np.isin(topo.link_dst, leaves)
    assert np.bincount(topo.link_src[leaf_ports], minlength=topo.nodes)[leaves].tolist() == [32 + 32] * 8
    with pytest.raises(FabricsimError, match=r"^topology: leaf-spine: 4096 NICs need 128 leaves"):
        build_system_topology(system, 4096)
    fat = build_system_topology(_system(tmp_path, "fat-tree"), 4096)  # a fat-tree grows a third tier
    assert _count(fat, NodeKind.SWITCH) > 128 + 512


def test_rail_only_system_keeps_rails_apart_and_relays_across_them_over_nvlink(tmp_path):
    topo = build_system_topology(_system(tmp_path, "rail-only"), 64)
    assert len(_routers(topo)) == 8  # one switch per rail (8 nodes fit a rail switch)
    table = route_table(topo)
    src, dst = np.repeat(np.arange(64), 64), np.tile(np.arange(64), 64)
    assert not unroutable(table, src, dst).any()  # cross-rail flows go through the scale-up switch
    def ring(system):
        return network_collective(NetworkCollectiveSpec(op="all-reduce", system=system, gpus=64, size="1GiB"))

    rail_only = ring(_system_file(tmp_path, "rail-only")).result.time_s
    bound = 2 * 63 / 64 * 2**30 / 8 / NIC_Bps  # rail-aligned rings: each NIC carries 1/8 of a GPU's bytes
    assert bound <= rail_only < 1.2 * bound
    assert rail_only == pytest.approx(ring("dgx-h100").result.time_s, rel=1e-9)  # rings never leave a rail


def test_fabric_replaces_the_scale_out_network_nic_j_of_node_n_on_port_n_times_nics_plus_j():
    fabric = build_topology("leaf-spine:leaves=5,spines=2,hosts_per_leaf=16,gbps=200")  # 80 ports, 64 used
    topo = build_system_topology(H100, 64, fabric)
    assert _count(topo, NodeKind.NIC) == 64 and _count(topo, NodeKind.SWITCH) == 8 + 5 + 2
    assert topo.line_rate_Bps == 25e9  # the fabric's host link, one NIC per GPU
    src, dst = _cable_ends(topo)
    nic_leaf = (topo.node_kind[src] == NodeKind.NIC) & (topo.node_kind[dst] == NodeKind.SWITCH)
    leaf_of_nic = dst[nic_leaf][np.argsort(src[nic_leaf])]
    assert (leaf_of_nic - leaf_of_nic.min()).tolist() == (np.arange(64) // 16).tolist()
    _gpu_nic_wiring(topo, 64, 8, 8)
    with pytest.raises(FabricsimError, match=r"^topology: leaf-spine-5x2 has 80 host ports, 16 nodes x 8 NICs"):
        build_system_topology(H100, 128, fabric)


def test_catalog_system_topology_is_unchanged_by_an_explicit_none_fabric():
    plain, none = build_system_topology(H100, 256), build_system_topology(H100, 256, None)
    assert plain.nodes == none.nodes and np.array_equal(plain.link_src, none.link_src)
    assert (plain.nodes, plain.links) == (256 + 32 + 256 + 8 + 32, 2 * (256 + 256 + 256 + 8 * 32))


@pytest.mark.parametrize(
    ("kind", "params", "message"),
    [
        ("dragonfly", "a=4,p=2", "^topology_params: needs h="),
        ("dragonfly", "a=4,p=2,h=2,x=1", "^topology_params: unknown key 'x'"),
        ("dragonfly", "a=40,p=20,h=20", "^topology_params: a dragonfly router with a=40, p=20, h=20 needs 79 ports"),
        ("dragonfly", "a=2,p=1,h=1", "^topology_params: dragonfly-a2p1h1 has 6 host ports, 8 nodes x 8 NICs need 64"),
        ("torus", "dims=4xfour", "^topology_params: dims must look like 8x8x8"),
        ("torus", "4x4x4", "^topology_params: '4x4x4' is not key=value"),
    ],
)
def test_a_shape_that_cannot_be_built_names_topology_params(tmp_path, kind, params, message):
    with pytest.raises(FabricsimError, match=message):
        build_system_topology(_system(tmp_path, kind, params), 64)


def test_unknown_topology_in_a_system_yaml_is_one_line_exit_2(tmp_path, capsys):
    path = _system_file(tmp_path, "hypercube")
    rc = main(["collective", "all-to-all", "--system", path, "--gpus", "16", "--size", "1MiB", "--fidelity", "flow"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert "scale_out.topology" in err and "dragonfly" in err and "Traceback" not in err


def test_api_system_topology_takes_a_builder_string_for_the_scale_out_network():
    from fabricsim.api.topologies import system_topology

    assert system_topology(H100, 64).nodes == build_system_topology(H100, 64).nodes
    topo = system_topology(H100, 64, "fat-tree:k=8,gbps=200")  # 128 ports, 64 used
    assert _count(topo, NodeKind.NIC) == 64 and topo.line_rate_Bps == 25e9
    for text, message in (("dgx-h100:gpus=64", "not a scale-out network builder"), ("fat-tree:k=4", "16 host ports")):
        with pytest.raises(FabricsimError, match=message) as info:
            system_topology(H100, 64, text)
        assert info.value.field == "topology"
