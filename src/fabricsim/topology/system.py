"""A catalog system's full topology from its spec (layer L2).

Scale-up: one NVSwitch node per scale-up domain (a DGX node's NVSwitch chips, or an NVL72 rack's
NVLink switch trays, merged), each GPU cabled to it at the spec's per-GPU NVLink bandwidth.
Scale-out: ``nics_per_node`` NIC nodes per server, NIC j on GPU j*gpus/nics through the host link
(PCIe or C2C), NICs cabled to a rail-optimized (or plain) Clos of the spec's switch radix and
oversubscription. Endpoints are the GPUs, node-major (GPU g on node g // gpus_per_node).
"""

from __future__ import annotations

import numpy as np

from fabricsim.specs import SystemSpec
from fabricsim.specs.fabric import TopologyKind
from fabricsim.topology.builders import LinkParams, RailSpec, rail_leaves
from fabricsim.topology.graph import GraphBuilder, NodeKind, Topology


def build_system_topology(system: SystemSpec, gpus: int) -> Topology:
    """Topology of ``gpus`` GPUs of ``system`` (validated with ``system.check_gpu_count``)."""
    system.check_gpu_count(gpus)
    per_node = min(system.gpus_per_node, gpus)
    nodes = system.nodes(gpus)
    graph = GraphBuilder()
    gpu_ids = graph.add_nodes(gpus, NodeKind.GPU)
    _scale_up(graph, system, gpu_ids)
    graph.switch_reduction = system.scale_out.in_network_reduction
    if nodes > 1:
        _scale_out(graph, system, gpu_ids.reshape(nodes, per_node))
    line_Bps = system.scale_up.bandwidth_Bps
    if nodes > 1:  # traffic across nodes is paced by the GPU's share of the node's NICs
        line_Bps = system.scale_out.bandwidth_per_node_Bps / per_node
    return graph.build(f"{system.name}-{gpus}", gpu_ids, line_Bps, {"gpus_per_node": per_node})


def _scale_up(graph: GraphBuilder, system: SystemSpec, gpu_ids: np.ndarray) -> None:
    domain = min(system.scale_up.domain_gpus, gpu_ids.size)
    domains = -(-gpu_ids.size // domain)
    switches = graph.add_nodes(domains, NodeKind.SWITCH, reduction=system.scale_up.in_network_reduction)
    link = system.scale_up.link
    graph.connect(gpu_ids, switches[np.arange(gpu_ids.size) // domain], system.scale_up.bandwidth_Bps, link.latency_s)


def _scale_out(graph: GraphBuilder, system: SystemSpec, gpus: np.ndarray) -> None:
    out = system.scale_out
    nodes, per_node = gpus.shape
    rails = out.nics_per_node
    nics = graph.add_nodes(nodes * rails, NodeKind.NIC).reshape(nodes, rails)
    owner = gpus[:, (np.arange(rails) * per_node) // rails]
    graph.connect(owner, nics, system.host_link.bandwidth_Bps, system.host_link.latency_s)
    nic = LinkParams(out.nic.bandwidth_Bps, out.switch.latency_s)
    if out.topology == TopologyKind.RAIL_OPTIMIZED:
        spec = RailSpec(nodes, rails, out.switch.radix, nic, out.oversubscription)
        rail_leaves(graph, nics, spec)
    else:
        spec = RailSpec(nodes * rails, 1, out.switch.radix, nic, out.oversubscription)
        rail_leaves(graph, nics.reshape(-1, 1), spec)
