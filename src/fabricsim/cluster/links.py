"""The fabric's links by switch tier, and their load during a run (layer L8).

A link's tier is the highest switch tier it reaches, named as ``fabricsim.topology.placement.TIERS``
names the tier a pair of endpoints crosses: ``scale-up`` (a GPU to its NVSwitch / NVLink domain),
``leaf`` (a NIC, or a host of a bare fabric, to its leaf switch), ``spine`` (leaf to the switches
above it), ``core`` (anything higher). Leaves are the switches next to NICs (next to endpoints when
the topology has no NICs, i.e. a builder string's bare fabric); the tiers above are counted in
switch hops from the leaves, capped at ``core``. In a fabric that is not a tree (dragonfly, torus)
every switch holds hosts: its switch-to-switch links count as ``spine`` (traffic leaving a leaf).
Links with no switch (a GPU's host link to its NIC) belong to no tier.

A link's load in a shared run is a steady state: every job repeats its step, so a link carries, per
second, the sum over jobs of the bytes one step of the job puts on it divided by the job's shared
step time; its utilisation is that rate over the link's capacity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabricsim.metrics import TierLoad
from fabricsim.topology.graph import NodeKind, Topology

TIERS = ("scale-up", "leaf", "spine", "core")
"""Tier names, lowest first (the same as ``fabricsim.topology.placement.TIERS`` of issue 23)."""
NO_TIER = -1


def _touching(topology: Topology, kind: NodeKind) -> np.ndarray:
    """bool [nodes]: switches with a link to a node of ``kind``."""
    src, dst = topology.link_src, topology.link_dst
    switch = topology.node_kind == NodeKind.SWITCH
    out = np.zeros(topology.nodes, dtype=bool)
    hit = switch[dst] & (topology.node_kind[src] == kind)
    out[dst[hit]] = True
    return out


def switch_levels(topology: Topology) -> np.ndarray:
    """int [nodes]: 0 scale-up switch, 1 leaf, 2 spine, 3 core and above; -1 for non-switches."""
    switch = topology.node_kind == NodeKind.SWITCH
    has_nics = bool(np.any(topology.node_kind == NodeKind.NIC))
    level = np.full(topology.nodes, NO_TIER, dtype=np.int64)
    near_gpus = _touching(topology, NodeKind.GPU)
    if has_nics:
        level[near_gpus] = 0
        frontier = _touching(topology, NodeKind.NIC) & (level < 0)
    else:
        frontier = near_gpus
    level[frontier] = 1
    src, dst = topology.link_src, topology.link_dst
    for depth in range(2, len(TIERS)):
        reached = np.zeros(topology.nodes, dtype=bool)
        step = frontier[src] & switch[dst] & (level[dst] < 0)
        reached[dst[step]] = True
        level[reached] = depth
        frontier = reached
    level[switch & (level < 0)] = len(TIERS) - 1  # farther from the leaves than core: still core
    return level


def link_tiers(topology: Topology) -> np.ndarray:
    """int [links]: the tier (index into :data:`TIERS`) of every directed link, -1 for none."""
    level = switch_levels(topology)
    a, b = level[topology.link_src], level[topology.link_dst]
    tier = np.maximum(a, b)
    same = (a == b) & (a >= 1)  # switch to switch on one level: a non-tree fabric's leaf links
    tier[same] = np.minimum(a[same] + 1, len(TIERS) - 1)
    return tier


def job_link_bytes(jobs: list[Any], fabric: Any, run: Any) -> np.ndarray:
    """float64 [jobs, links]: the bytes one step of each job puts on every directed link of the
    fabric in the engine's run (``fabricsim.engine.fabric_loop``): a communication op of job j is
    ``repeat`` calls of its item's flows (``run.flows[(j, stage, payload)]``, the stage being the op's
    rank modulo the job's pipeline stages, as the fabric loop keys them), routed by the fabric's
    network model (``network.routes(flows).incidence``: the share of each flow on each link).
    O(items x flows) plus one routing per item."""
    carried = np.zeros((len(jobs), fabric.topology.links))
    calls: dict[tuple[int, int, Any], int] = {}
    for j, job in enumerate(jobs):
        for op in job.graph.ops:
            if op.payload is not None and op.payload.group_gpus > 1:
                item = (j, op.rank % job.stages, op.payload)
                calls[item] = calls.get(item, 0) + max(op.repeat, 1)
    for item, count in calls.items():
        flows = run.flows.get(item)
        if flows is not None and flows.count:
            carried[item[0]] += count * (fabric.network.routes(flows).incidence @ flows.size_bytes)
    return carried


def tier_loads(topology: Topology, step_bytes: np.ndarray, step_s: np.ndarray) -> tuple[TierLoad, ...]:
    """Per tier present in ``topology``: mean and max utilisation of its directed links in the
    shared steady state (module docstring) and the bytes one step of every job puts on them.
    ``step_bytes`` [jobs, links] from :func:`job_link_bytes`, ``step_s`` [jobs] the shared step
    times. O(jobs x links)."""
    tiers = link_tiers(topology)
    carried = np.asarray(step_bytes, dtype=np.float64).reshape(-1, topology.links)
    rate_Bps = (carried / np.asarray(step_s, dtype=np.float64).reshape(-1, 1)).sum(axis=0)
    utilization = rate_Bps / topology.capacity_Bps
    per_link = carried.sum(axis=0)
    out = []
    for index, name in enumerate(TIERS):
        mine = tiers == index
        if np.any(mine):
            out.append(TierLoad(name, float(utilization[mine].mean()), float(utilization[mine].max()),
                                float(per_link[mine].sum())))
    return tuple(out)
