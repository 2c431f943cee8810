"""The torus links' dimensions and datelines (network/packet/vc.py): one dateline per ring and
direction, the wraparound link; nothing on a topology that is not a torus."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.api.topologies import build_topology
from fabricsim.network.packet.vc import torus_channels


@pytest.mark.parametrize(
    ("name", "per_dim", "datelines"),
    [
        ("ocs-torus:4x4x4", [128, 128, 128], 3 * 16 * 2),  # 16 rings per dimension, two directions each
        ("ocs-torus:4x4x8,twisted=1", [256, 256, 256], 2 * 32 * 2 + 16 * 2),
        ("torus:dims=4x3x2", [48, 48, 24], 6 * 2 + 8 * 2),  # a ring of 2 is one cable each way: no cycle
    ],
)
def test_every_ring_has_its_wraparound_as_its_dateline(name, per_dim, datelines):
    topo = build_topology(name)
    dim, dateline = torus_channels(topo)
    routers = (topo.link_src >= topo.hosts) & (topo.link_dst >= topo.hosts)
    assert np.all(dim[routers] >= 0) and np.all(dim[~routers] == -1)
    assert np.bincount(dim[routers]).tolist() == per_dim
    assert int(dateline.sum()) == datelines


def test_the_ocs_datelines_are_the_wraparound_cables():
    topo = build_topology("ocs-torus:4x4x4")
    dim, dateline = torus_channels(topo)
    a, b = topo.link_src.astype(int) - 64, topo.link_dst.astype(int) - 64
    x_links = dim == 0
    wrap = {(int(s), int(d)) for s, d in zip(a[x_links & (dateline == 1)], b[x_links & (dateline == 1)], strict=True)}
    assert (3, 0) in wrap and (0, 3) in wrap and (1, 2) not in wrap and len(wrap) == 32


def test_a_fat_tree_has_no_torus_link():
    dim, dateline = torus_channels(build_topology("fat-tree:k=4"))
    assert np.all(dim == -1) and not dateline.any()


def test_each_virtual_channel_of_a_torus_link_has_its_own_credits():
    from fabricsim.network.packet import layout as L  # noqa: N812 (the column-name table)
    from fabricsim.network.packet.model import _link_tables
    from fabricsim.network.packet.params import Lossless, PacketParams, resolved

    for name, torus in (("ocs-torus:4x4x4", True), ("fat-tree:k=4", False)):
        topo = build_topology(name)
        LI = _link_tables(topo, resolved(PacketParams(), topo.line_rate_Bps), Lossless.CREDIT)[0]
        routers = (topo.link_src >= topo.hosts) & (topo.link_dst >= topo.hosts) & torus
        assert np.array_equal(LI[routers, L.LI_CREDITS_VC1], LI[routers, L.LI_CREDITS])  # a buffer per VC
        assert not LI[~routers, L.LI_CREDITS_VC1].any()  # one VC off a torus
        assert np.all(LI[:, L.LI_VQHEAD] == -1) and np.all(LI[:, L.LI_VQTAIL] == -1)


@pytest.mark.parametrize(
    ("name", "per_dim", "datelines"),
    [
        ("tpu-v6e:gpus=512", [1024, 1024], 2 * 2 * 16 * 2),  # two 16x16 pods: 16 rings per dimension and pod
        ("tpu-v5p:gpus=128", [256, 256, 256], 2 * 3 * 16 * 2),  # two 4x4x4 cubes
        ("tpu-v6e:gpus=64", [128, 96], 4 * 2),  # 4 rows of a pod: the x rings close, the y lines do not
    ],
)
def test_a_systems_torus_domains_have_datelines_too(name, per_dim, datelines):
    """A system's ICI tori (topology/system.py) were recognised by no name: credits had one VC there."""
    topo = build_topology(name)
    dim, dateline = torus_channels(topo)
    hosts = topo.hosts
    src, dst = topo.link_src.astype(int), topo.link_dst.astype(int)
    routers = (src >= hosts) & (src < 2 * hosts) & (dst >= hosts) & (dst < 2 * hosts)  # GPU g's router: hosts + g
    assert np.all(dim[routers] >= 0) and np.all(dim[~routers] == -1)  # NIC and scale-out links: none
    assert np.bincount(dim[routers]).tolist() == per_dim
    assert int(dateline.sum()) == datelines


def test_a_v6e_pods_datelines_are_its_wraparound_cables():
    topo = build_topology("tpu-v6e:gpus=512")
    dim, dateline = torus_channels(topo)
    a, b = topo.link_src.astype(int) - 512, topo.link_dst.astype(int) - 512  # router positions, x fastest
    on = dateline == 1
    pairs = {(int(s) % 256, int(d) % 256, int(k)) for s, d, k in zip(a[on], b[on], dim[on], strict=True)}
    assert (15, 0, 0) in pairs and (0, 15, 0) in pairs and (240, 0, 1) in pairs and (0, 240, 1) in pairs
    assert (0, 1, 0) not in pairs and np.all(a[on] // 256 == b[on] // 256)  # within one pod
