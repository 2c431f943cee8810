"""``--background`` enters the fabric at the NICs (api/fabric.py ``_background_hosts``): its senders
are the GPUs cabled to a NIC, each at LOAD of its share. On a TPU v6e host (4 NICs for 8 chips)
every chip is cabled to the NIC it shares (topology/system.py), so all 8 send at their 100 Gb/s
share of a 200 Gb/s NIC: the fabric carries the same load as 4 senders at 200 Gb/s did when only
every other chip had a NIC; where every GPU has its NIC nothing changes."""

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


def test_on_tpu_v6e_every_chip_sends_the_background_at_its_share_of_a_shared_nic():
    system, topology, flows = _background("tpu-v6e", 512)  # two 256-chip pods, 64 hosts
    assert system.gpus_per_node == 8 and system.scale_out.nics_per_node == 4
    nic_Bps = system.scale_out.nic.bandwidth_Bps  # 200 Gb/s, shared by 2 chips
    assert set(flows.src.tolist()) == set(flows.dst.tolist()) == set(range(512))
    assert np.allclose(flows.max_rate_Bps, 0.5 * nic_Bps / 2)
    assert flows.max_rate_Bps.sum() == pytest.approx(0.5 * 512 / 8 * system.scale_out.bandwidth_per_node_Bps)
    domain = tier_map(topology).domain
    assert np.all(domain[flows.src] != domain[flows.dst])  # between the pods only
    # before every chip had a NIC, routing the background from a chip without one failed
    # ("no path for flow 4 to endpoint 435")
    routes = FlowNetwork(route_table(topology), Routing.ECMP, 0).routes(flows)
    assert routes.incidence.shape[1] == flows.count


def test_where_every_gpu_has_its_nic_every_gpu_sends_at_its_share():
    system, _, flows = _background("dgx-h100", 32)
    assert set(flows.src.tolist()) == set(range(32))
    assert np.all(flows.max_rate_Bps == 0.5 * system.scale_out.bandwidth_per_node_Bps / 8)
