"""Component counts of a built topology: switches, NICs and cables by what they join (layer L2).

Counted from the graph itself (:class:`~fabricsim.topology.graph.Topology`), so every builder
(a catalog system, fat-tree, leaf-spine, rail-optimized, dragonfly, torus) is counted the same way
and the counts cannot drift from what the network models simulate. A cable is one undirected pair
of directed links (:func:`~fabricsim.topology.graph.cables`). Cost O(links · log links).

In a system topology (:func:`~fabricsim.topology.system.build_system_topology`) the switches cabled
to GPUs are the scale-up domains (NVSwitch chips merged per domain) and the others the scale-out
fabric; GPU-NIC links are the host link (PCIe or C2C), NIC-switch cables the access cables, and
switch-switch cables the fabric cables (the ones with spare paths).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.topology.graph import NodeKind, Topology, cables


@dataclass(frozen=True, slots=True)
class Inventory:
    """Counts of one topology. ``edge_switches`` are cabled to an endpoint; ``fabric_switches`` are not."""

    endpoints: int
    nics: int
    edge_switches: int
    fabric_switches: int
    endpoint_switch_cables: int
    endpoint_nic_links: int
    nic_switch_cables: int
    switch_switch_cables: int

    @property
    def switches(self) -> int:
        return self.edge_switches + self.fabric_switches


def inventory(topology: Topology) -> Inventory:
    """Count the nodes and cables of ``topology`` by kind (see the module docstring)."""
    kind = topology.node_kind.astype(np.int64)
    pairs = cables(topology)
    a = topology.link_src[pairs[:, 0]]
    b = topology.link_dst[pairs[:, 0]]
    ka, kb = kind[a], kind[b]

    def joined(first: NodeKind, second: NodeKind) -> np.ndarray:
        return ((ka == first) & (kb == second)) | ((ka == second) & (kb == first))

    endpoint_switch = joined(NodeKind.GPU, NodeKind.SWITCH)
    touching = np.zeros(kind.size, dtype=bool)
    touching[a[endpoint_switch]] = True
    touching[b[endpoint_switch]] = True
    is_switch = kind == NodeKind.SWITCH
    edge = int((is_switch & touching).sum())
    return Inventory(
        endpoints=topology.hosts,
        nics=int((kind == NodeKind.NIC).sum()),
        edge_switches=edge,
        fabric_switches=int(is_switch.sum()) - edge,
        endpoint_switch_cables=int(endpoint_switch.sum()),
        endpoint_nic_links=int(joined(NodeKind.GPU, NodeKind.NIC).sum()),
        nic_switch_cables=int(joined(NodeKind.NIC, NodeKind.SWITCH).sum()),
        switch_switch_cables=int(joined(NodeKind.SWITCH, NodeKind.SWITCH).sum()),
    )
