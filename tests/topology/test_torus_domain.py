"""A torus scale-up domain in the topology and in group placement (issue 25): every chip cabled to
its neighbours along each dimension with wraparound, one catalog link each, through its own ICI
router (routes never pass through a GPU); tensor/data-parallel groups map onto torus dimensions."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.collectives import place_group
from fabricsim.collectives.placement import torus_rings
from fabricsim.specs import ScaleUpSpec
from fabricsim.topology.graph import NodeKind
from fabricsim.topology.system import build_system_topology, torus_pairs

V5P = catalog.load_system("tpu-v5p")
LINK = V5P.scale_up.link.bandwidth_Bps
LINKS = (LINK,) * 3


def test_a_v5p_cube_is_a_4x4x4_torus_of_six_links_per_chip() -> None:
    topo = build_system_topology(V5P, 64)
    routers = np.arange(64, 128)  # one ICI router per chip, added right after the 64 GPUs
    assert np.all(topo.node_kind[routers] == NodeKind.SWITCH)
    ici = np.isin(topo.link_src, routers) & np.isin(topo.link_dst, routers)
    degrees = np.bincount(topo.link_src[ici] - 64, minlength=64)
    assert np.all(degrees == 6)  # 2 neighbours x 3 dimensions, wraparound
    assert np.all(topo.capacity_Bps[ici] == LINK)


def test_torus_pairs_wrap_around_and_a_dimension_of_two_has_one_cable() -> None:
    src, dst, _ = torus_pairs((4,))
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == [(0, 1), (1, 2), (2, 3), (3, 0)]
    src, dst, dim = torus_pairs((2, 3))  # x: one cable per pair (3 of them); y: a ring of 3 per column (6)
    assert len(src) == 3 + 6 and np.bincount(dim).tolist() == [3, 6]
    assert {(0, 1), (2, 3), (4, 5)} <= set(zip(src.tolist(), dst.tolist(), strict=True))


def test_v6e_pod_is_a_16x16_torus_with_the_published_bisection() -> None:
    """Cloud TPU v6e docs: bisection bandwidth per Pod 3.2 TB/s: a cut across one dimension of the
    16x16 torus crosses 16 rows twice (wraparound) at 100 GB/s per link per direction."""
    system = catalog.load_system("tpu-v6e")
    assert system.scale_up.dims == (16, 16)
    assert 16 * 2 * system.scale_up.link.bandwidth_Bps == pytest.approx(3.2e12)


def test_groups_map_onto_torus_dimensions() -> None:
    assert torus_rings((4, 4, 4), 4, 1, LINKS) == ((4, 2 * LINK),)  # tp=4: the x ring, both ways
    assert torus_rings((4, 4, 4), 16, 1, LINKS) == ((4, 2 * LINK), (4, 2 * LINK))  # x and y
    assert torus_rings((4, 4, 4), 4, 4, LINKS) == ((4, 2 * LINK),)  # dp over y (stride tp=4)
    assert torus_rings((4, 4, 4), 2, 1, LINKS) == ((2, LINK),)  # half of x: an open line, one link
    assert torus_rings((4, 4, 4), 4, 2, LINKS) == ()  # stride 2 splits x: not on whole dimensions
    group = place_group(V5P, 16)
    assert group.torus and group.torus_rings == ((4, 2 * LINK), (4, 2 * LINK))
    assert group.scale_up_Bps == 4 * LINK  # the rings' bandwidth, under the chip's 6 links


def test_torus_needs_dims_that_hold_the_domain() -> None:
    up = V5P.scale_up.model_dump()
    with pytest.raises(ValueError, match="dims"):
        ScaleUpSpec.model_validate({**up, "dims": (4, 4, 2)})
    with pytest.raises(ValueError, match="dims"):
        ScaleUpSpec.model_validate({**up, "topology": "switch"})


def test_trn2_ultraserver_rings_across_instances_run_at_their_slower_links() -> None:
    """AWS Trn2 docs: 4x4 NeuronLink torus inside an instance (1,024 GB/sec/chip), a ring across the
    4 instances (256 GB/sec/chip): the z links carry half an in-instance link's bandwidth."""
    system = catalog.load_system("trn2-ultraserver")
    x_Bps, _, z_Bps = system.scale_up.torus_link_Bps
    assert z_Bps == x_Bps / 2
    topo = build_system_topology(system, 64)
    routers = np.arange(64, 128)
    ici = np.isin(topo.link_src, routers) & np.isin(topo.link_dst, routers)
    caps = topo.capacity_Bps[ici]
    assert np.sum(caps == z_Bps) == 64 * 2 and np.sum(caps == x_Bps) == 64 * 4  # directed links
    dp = place_group(system, 4, 16)  # data-parallel over the 4 instances: the z ring
    assert dp.torus_rings == ((4, 2 * z_Bps),)


def test_a_job_inside_one_torus_has_no_scale_out_network() -> None:
    """Chips of one slice talk over ICI only: with the data-center network built, shortest-path
    routing sent chip pairs whose ICI path is as long as a NIC path over the 50 Gb/s DCN."""
    inside = build_system_topology(V5P, 64)
    assert inside.nodes == 128  # 64 chips + 64 ICI routers, no NIC or leaf
    across = build_system_topology(V5P, 128)  # two cubes: joined by the DCN
    assert across.nodes > 2 * 128
