"""A topology's component counts, and those of a rail-optimized Clos in closed form (layer L2).

:class:`Inventory` is what :func:`fabricsim.topology.inventory.count_inventory` counts on a built
graph. :func:`rail_optimized_inventory` gives the same counts for
:func:`fabricsim.topology.builders.rail_optimized` from its parameters alone, without building the
graph: the energy figures of every ``train``/``infer``/``serve`` call need the system fabric's
switch and cable counts, and building the graph imports numpy (a third of a one-off command's
start-up). tests/topology/test_clos_counts.py checks it equal to the count of the built graph.

This module imports nothing heavy on purpose (no numpy).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Inventory:
    """Counts of one topology. ``switches_by_tier[i]`` is tier i+1 (physical boxes, see
    :mod:`fabricsim.topology.inventory`); ``switch_nodes_by_tier`` the graph's switch nodes;
    ``ports_by_tier`` the cabled ports."""

    name: str
    endpoints: int
    gpus: int
    nics: int
    scale_up_switches: int
    switches_by_tier: tuple[int, ...]
    switch_nodes_by_tier: tuple[int, ...]
    ports_by_tier: tuple[int, ...]
    cables: tuple[tuple[str, int], ...]

    @property
    def switches(self) -> int:
        return sum(self.switches_by_tier)

    def cable_count(self, cable_class: str) -> int:
        return dict(self.cables).get(cable_class, 0)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def rail_optimized_inventory(nodes: int, rails: int, radix: int, oversubscription: float = 1.0) -> Inventory | None:
    """The :class:`Inventory` of ``rail_optimized(RailSpec(nodes, rails, radix, _, oversubscription))``
    counted with boxes of ``radix`` ports, or None where the builder would refuse the parameters
    (the caller builds it then, for the builder's error).

    The builder's cabling (:func:`fabricsim.topology.builders.rail_leaves` and ``_clos_above``):
    leaves of ``down`` NIC ports and ``up`` uplinks, one leaf per (group of ``down`` nodes, rail);
    two tiers (``up`` spines, each cabled to every leaf) when the leaves fit one spine's radix,
    else pods of radix/2 leaves with ``up`` aggregation switches each and ``up`` x radix/2 cores,
    aggregation switch u of every pod cabled to core row u. The NICs are the endpoints (GPU nodes
    of the graph), so every cable from a NIC is an ``access`` cable.
    """
    if min(nodes, rails) < 1 or radix < 2:
        return None
    down = max(1, round(radix * oversubscription / (1 + oversubscription)))
    up = max(1, radix - down)
    nics = nodes * rails
    leaves = _ceil_div(nodes, down) * rails
    cables = [("access", nics), ("tier1-2", leaves * up)]
    if leaves <= radix:  # leaves and spines
        nodes_by_tier: tuple[int, ...] = (leaves, up)
        ports_by_tier: tuple[int, ...] = (nics + leaves * up, leaves * up)
    else:  # leaves, aggregation, core
        per_pod = max(1, radix // 2)
        pods = _ceil_div(leaves, per_pod)
        if pods > radix:
            return None
        agg_core = pods * up * per_pod
        cables.append(("tier2-3", agg_core))
        nodes_by_tier = (leaves, pods * up, up * per_pod)
        ports_by_tier = (nics + leaves * up, leaves * up + agg_core, agg_core)
    boxes = (leaves, *(_ceil_div(ports, radix) for ports in ports_by_tier[1:]))
    return Inventory(
        name=f"rail-optimized-{nodes}x{rails}",
        endpoints=nics,
        gpus=nics,
        nics=0,
        scale_up_switches=0,
        switches_by_tier=boxes,
        switch_nodes_by_tier=nodes_by_tier,
        ports_by_tier=ports_by_tier,
        cables=tuple(cables),
    )
