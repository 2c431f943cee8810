"""Counting a built topology's components: switches by tier, ports, cables by class (layer L2).

The count is taken from the graph a builder produced, never from the builder's parameters, so
closed forms (k-ary fat-tree: 5k^2/4 switches, k^3/4 hosts; dragonfly: g = a*h + 1 groups, g*a*h/2
global cables) test the builders and the counting together.

* Access nodes are the NICs in a system topology (:func:`~fabricsim.topology.system.build_system_topology`,
  whose single-node graphs have no NIC and so no scale-out at all), else the endpoints.
* A switch's tier is 1 + its hop distance (over switch-switch cables) from a switch cabled to an
  access node; switches no access node reaches through switches (NVSwitch domains of a system
  graph) are counted as scale-up switches.
* Cable classes: ``host`` (GPU-NIC, inside a server), ``scale-up`` (GPU-NVSwitch, or GPU-GPU in a
  full-mesh domain), ``access`` (access node to its tier-1 switch), ``tier1-2``/``tier2-3``/...
  (between tiers), and between switches of one tier ``local``/``global`` on a dragonfly (same
  group or not) or ``peer`` (torus).
* Physical boxes: tier 1 switches are boxes as built; above tier 1 the builders make one node per
  uplink index (the folded Clos of :mod:`fabricsim.topology.builders`), so a node may use only part
  of a radix; given ``radix``, the boxes of a tier are ceil(ports used / radix), which is what
  NVIDIA's DGX SuperPOD tables list (e.g. 4 SU, 128 nodes: 32 leaves, 16 spines).

This module is self-contained on purpose (reliability and cost both count components). The
:class:`Inventory` it returns lives in :mod:`fabricsim.topology.clos_counts` (no numpy), with the
closed form of a rail-optimized Clos's counts.
"""

from __future__ import annotations

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.topology.clos_counts import Inventory
from fabricsim.topology.graph import NodeKind, Topology, cables

__all__ = ["Inventory", "count_inventory", "switch_tiers"]


def _access_nodes(topology: Topology) -> np.ndarray:
    kinds = topology.node_kind
    if np.any(kinds == NodeKind.NIC) or "gpus_per_node" in topology.meta:
        return kinds == NodeKind.NIC
    access = np.zeros(topology.nodes, dtype=bool)
    access[topology.endpoints] = True
    return access


def switch_tiers(topology: Topology, ends: np.ndarray) -> np.ndarray:
    """Tier of every node (0 for non-switches and unreached switches); ``ends`` is [cables, 2] nodes.

    Breadth-first from the access nodes across switch-switch cables; O(tiers x cables).
    """
    is_switch = topology.node_kind == NodeKind.SWITCH
    access = _access_nodes(topology)
    tier = np.zeros(topology.nodes, dtype=np.int64)
    a, b = ends[:, 0], ends[:, 1]
    first = np.concatenate([b[access[a] & is_switch[b]], a[access[b] & is_switch[a]]])
    tier[first] = 1
    both = is_switch[a] & is_switch[b]
    sa, sb = a[both], b[both]
    level = 1
    while True:
        grow = np.concatenate([sb[(tier[sa] == level) & (tier[sb] == 0)], sa[(tier[sb] == level) & (tier[sa] == 0)]])
        if grow.size == 0:
            return tier
        level += 1
        tier[grow] = level


def _cable_class(topology: Topology, ends: np.ndarray, tier: np.ndarray) -> np.ndarray:
    """One label per cable (see the module docstring)."""
    kinds = topology.node_kind
    a, b = ends[:, 0], ends[:, 1]
    ka, kb = kinds[a], kinds[b]
    ta, tb = tier[a], tier[b]
    label = np.full(ends.shape[0], "other", dtype=object)
    gpu_nic = ((ka == NodeKind.GPU) & (kb == NodeKind.NIC)) | ((kb == NodeKind.GPU) & (ka == NodeKind.NIC))
    label[gpu_nic] = "host"
    switch_a, switch_b = ka == NodeKind.SWITCH, kb == NodeKind.SWITCH
    scale_up = (switch_a & (ta == 0)) | (switch_b & (tb == 0)) | ((ka == NodeKind.GPU) & (kb == NodeKind.GPU))
    label[scale_up] = "scale-up"
    access = (switch_a ^ switch_b) & ~scale_up & ~gpu_nic
    label[access] = "access"
    inter = switch_a & switch_b & (ta > 0) & (tb > 0)
    low, high = np.minimum(ta, tb), np.maximum(ta, tb)
    for t in np.unique(low[inter & (low != high)]):
        label[inter & (low == t) & (high == t + 1)] = f"tier{t}-{t + 1}"
    same = inter & (ta == tb)
    label[same] = "peer"
    group_size = topology.meta.get("a")
    if group_size and "groups" in topology.meta and same.any():
        first_router = int(np.flatnonzero(kinds == NodeKind.SWITCH)[0])
        ga, gb = (a - first_router) // int(group_size), (b - first_router) // int(group_size)
        label[same & (ga == gb)] = "local"
        label[same & (ga != gb)] = "global"
    return label


def count_inventory(topology: Topology, radix: int | None = None) -> Inventory:
    """Count ``topology``'s switches by tier, ports and cables by class (module docstring).

    ``radix``: ports per physical switch; tiers above 1 are packed into ceil(ports/radix) boxes.
    Cost O(tiers x cables).
    """
    if radix is not None and (isinstance(radix, bool) or not isinstance(radix, (int, np.integer)) or radix < 1):
        raise FabricsimError("radix", f"must be a positive integer, got {radix!r}")
    pairs = cables(topology)
    ends = np.stack([topology.link_src[pairs[:, 0]], topology.link_dst[pairs[:, 0]]], axis=1).astype(np.int64)
    tier = switch_tiers(topology, ends)
    labels = _cable_class(topology, ends, tier)
    kinds = topology.node_kind
    is_switch = kinds == NodeKind.SWITCH
    degree = np.bincount(ends.ravel(), minlength=topology.nodes)
    top = int(tier.max(initial=0))
    nodes_by_tier = tuple(int(np.sum(is_switch & (tier == t))) for t in range(1, top + 1))
    ports_by_tier = tuple(int(degree[is_switch & (tier == t)].sum()) for t in range(1, top + 1))
    boxes = tuple(
        nodes if t == 1 or radix is None else -(-ports // int(radix))
        for t, (nodes, ports) in enumerate(zip(nodes_by_tier, ports_by_tier, strict=True), start=1)
    )
    names, counts = np.unique(labels.astype(str), return_counts=True)
    return Inventory(
        name=topology.name,
        endpoints=topology.hosts,
        gpus=int(np.sum(kinds == NodeKind.GPU)),
        nics=int(np.sum(kinds == NodeKind.NIC)),
        scale_up_switches=int(np.sum(is_switch & (tier == 0))),
        switches_by_tier=boxes,
        switch_nodes_by_tier=nodes_by_tier,
        ports_by_tier=ports_by_tier,
        cables=tuple((str(n), int(c)) for n, c in zip(names, counts, strict=True)),
    )
