"""Servers with fewer NICs than GPUs (topology/system.py): TPU v6e hosts have 8 chips and 4 NICs
(Cloud TPU docs), so every chip is cabled to the NIC it shares by its own PCIe link, the chips of
a NIC share its line, and routing never turns a NIC around between two chips of its host. Before,
half the chips had no path off their 256-chip pod ("no path for flow 514 to endpoint 257")."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.collectives import place_group
from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.graph import GraphBuilder, NodeKind, remove_links
from fabricsim.topology.routing import FlowEnds, Routing, route, route_table, unroutable
from fabricsim.topology.system import build_system_topology

V6E = catalog.load_system("tpu-v6e")
TWO_PODS = build_system_topology(V6E, 512)
TABLE = route_table(TWO_PODS)
NIC_Bps = V6E.scale_out.nic.bandwidth_Bps  # 200 Gb/s


def _host_links(topology):
    kind = topology.node_kind
    return np.flatnonzero((kind[topology.link_src] == NodeKind.GPU) & (kind[topology.link_dst] == NodeKind.NIC))


def _nodes_on_route(table, src: int, dst: int, routing: Routing) -> set[int]:
    ends = FlowEnds(np.array([src]), np.array([dst]), np.zeros(1), np.zeros(1, dtype=np.int64))
    links = route(table, ends, routing, 0).incidence.tocoo().row
    topo = table.topology
    return set(topo.link_src[links].tolist()) | set(topo.link_dst[links].tolist())


def test_every_v6e_chip_has_its_own_host_link_to_a_nic_shared_by_two() -> None:
    links = _host_links(TWO_PODS)
    gpus = TWO_PODS.link_src[links]
    assert sorted(gpus.tolist()) == list(range(512))  # one host link per chip, none without
    assert np.all(TWO_PODS.capacity_Bps[links] == V6E.host_link.bandwidth_Bps)
    per_nic = np.bincount(TWO_PODS.link_dst[links])
    assert set(per_nic[per_nic > 0].tolist()) == {2}  # 8 chips on 4 NICs: chips 2j and 2j+1 on NIC j
    nic_of = dict(zip(gpus.tolist(), TWO_PODS.link_dst[links].tolist(), strict=True))
    assert nic_of[0] == nic_of[1] != nic_of[2]


def test_every_chip_reaches_every_chip_of_the_other_pod() -> None:
    src = np.repeat(np.arange(0, 512, 7), 3)
    dst = (src + np.tile([256, 257, 300], src.size // 3)) % 512
    assert not unroutable(TABLE, src, dst).any()
    flows = make_flows(src, dst, 1e6)
    assert FlowNetwork(TABLE).routes(flows).incidence.shape[1] == src.size


@pytest.mark.parametrize("routing", list(Routing))
def test_chips_sharing_a_nic_talk_over_ici_not_through_the_nic(routing) -> None:
    nics = set(np.flatnonzero(TWO_PODS.node_kind == NodeKind.NIC).tolist())
    for src, dst in ((0, 1), (1, 0), (6, 7)):
        assert not _nodes_on_route(TABLE, src, dst, routing) & nics


def test_all_chips_across_the_pods_get_the_closed_form_share_of_their_nic() -> None:
    """Every chip sending to the other pod at once: the 2 chips of a NIC split its 200 Gb/s, the
    25 GB/s x 4 / 8 per chip that the closed form (collectives/placement.py) gives a group. Sprayed:
    ECMP's hash collisions above the leaves would set some rates, not the NICs."""
    share = place_group(V6E, 512).scale_out_Bps
    assert share == pytest.approx(NIC_Bps * 4 / 8)
    src = np.arange(512)
    result = FlowNetwork(TABLE, Routing.SPRAY).run(make_flows(src, (src + 256) % 512, 1e8))
    assert np.allclose(result.first_rate_Bps, share)


def test_a_lone_chip_gets_its_whole_nic() -> None:
    """What the closed form's fixed share does not show: a chip whose NIC partner is idle sends at
    the NIC's line rate (below its PCIe Gen5 x16 link)."""
    result = FlowNetwork(TABLE).run(make_flows([1], [257], 1e8))
    assert result.first_rate_Bps[0] == pytest.approx(NIC_Bps)


def test_gpus_sharing_a_nic_behind_an_nvswitch_use_nvlink_between_them() -> None:
    """An NVSwitch node with 4 NICs for 8 GPUs (a user's system file): GPU -> NIC -> GPU would tie
    with GPU -> NVSwitch -> GPU at 2 hops; routing keeps the pair on NVLink, and every GPU reaches
    the other node."""
    h100 = catalog.load_system("dgx-h100")
    data = h100.model_dump()
    data["scale_out"]["nics_per_node"] = 4
    system = type(h100).model_validate(data)
    topo = build_system_topology(system, 16)
    table = route_table(topo)
    nics = set(np.flatnonzero(topo.node_kind == NodeKind.NIC).tolist())
    for routing in Routing:
        assert not _nodes_on_route(table, 0, 1, routing) & nics
    assert _nodes_on_route(table, 1, 9, Routing.ECMP) & nics
    assert not unroutable(table, np.arange(8), np.arange(8) + 8).any()


def _two_islands():
    graph = GraphBuilder()
    gpus = graph.add_nodes(2, NodeKind.GPU)
    switches = graph.add_nodes(2, NodeKind.SWITCH)
    graph.connect(gpus, switches, 1e9, 1e-6)
    return graph.build("islands", gpus, 1e9)


def test_no_path_blames_failed_links_only_when_links_failed() -> None:
    islands = _two_islands()
    flows = make_flows([0], [1], 1e6)
    with pytest.raises(FabricsimError, match="does not connect") as error:
        FlowNetwork(route_table(islands)).run(flows)
    assert "failed" not in str(error.value)
    graph = GraphBuilder()
    gpus = graph.add_nodes(2, NodeKind.GPU)
    switch = graph.add_nodes(1, NodeKind.SWITCH)
    graph.connect(gpus, switch, 1e9, 1e-6)
    cut = remove_links(graph.build("star", gpus, 1e9), [2, 3])  # GPU 1's cable, both directions
    with pytest.raises(FabricsimError, match="2 links failed"):
        FlowNetwork(route_table(cut)).run(flows)
