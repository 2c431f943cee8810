"""``--background`` enters the fabric at the NICs (api/fabric.py ``_background_hosts``): on a TPU v6e
host (4 NICs for 8 chips) only the chips cabled to a NIC send, each at LOAD of its NIC's 200 Gb/s,
so the fabric carries the same load as before; where every GPU has its NIC nothing changes."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.api.fabric import fabric_on
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.placement import tier_map
from fabricsim.topology.routing import Routing, route_table
from fabricsim.topology.system import build_system_topology


def _background(system_name: str, gpus: int, load: float = 0.5):
    system = catalog.load_system(system_name)
    topology = build_system_topology(system, gpus)
    share = system.scale_out.bandwidth_per_node_Bps / system.gpus_per_node  # what the callers pass
    fabric, _, _ = fabric_on(topology, system.scale_out.nic.kind, "flow", None, (f"permutation:{load}", share))
    return system, topology, fabric.background


def test_on_tpu_v6e_only_the_chips_with_a_nic_send_the_background_at_the_nics_rate():
    system, topology, flows = _background("tpu-v6e", 512)  # two 256-chip pods, 64 hosts
    assert system.gpus_per_node == 8 and system.scale_out.nics_per_node == 4
    nic_Bps = system.scale_out.nic.bandwidth_Bps  # 200 Gb/s
    owners = np.flatnonzero(np.arange(512) % 8 % 2 == 0)  # NIC j on chip j * 8 / 4 of every host
    assert set(flows.src.tolist()) == set(flows.dst.tolist()) == set(owners.tolist())
    assert np.allclose(flows.max_rate_Bps, 0.5 * nic_Bps)
    assert flows.max_rate_Bps.sum() == pytest.approx(0.5 * 512 / 8 * system.scale_out.bandwidth_per_node_Bps)
    domain = tier_map(topology).domain
    assert np.all(domain[flows.src] != domain[flows.dst])  # between the pods only
    # a chip without a NIC has no scale-out path (routes never pass through a chip): before, routing
    # the background failed ("no path for flow 4 to endpoint 435")
    routes = FlowNetwork(route_table(topology), Routing.ECMP, 0).routes(flows)
    assert routes.incidence.shape[1] == flows.count


def test_where_every_gpu_has_its_nic_every_gpu_sends_at_its_share():
    system, _, flows = _background("dgx-h100", 32)
    assert set(flows.src.tolist()) == set(range(32))
    assert np.all(flows.max_rate_Bps == 0.5 * system.scale_out.bandwidth_per_node_Bps / 8)
