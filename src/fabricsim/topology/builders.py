"""Topology builders (layer L2): NVSwitch/NVL72, fat-tree, leaf-spine, rail-optimized, dragonfly, torus.

Every builder returns a :class:`~fabricsim.topology.graph.Topology`. Capacities are bytes/s per
direction; ``latency_s`` is per link (one hop). Switch-to-switch links (a Clos's uplinks, a
dragonfly's or torus's router-to-router links) take ``spine`` when given, else the host link's
parameters; ``core`` sets a 3-tier Clos's aggregation-core links apart (default ``spine``), and a
dragonfly's router links may be given as (local, global). Impossible parameters raise
``FabricsimError`` naming the field. The tiered networks share one folded-Clos constructor
(:func:`_clos_above`): leaves get ``up`` uplinks each; two tiers when one spine can reach every
leaf, else three tiers (pods of ``radix/2`` leaves, ``up`` aggregation switches per pod, core groups
per aggregation index), which for leaves = k^2/2,
up = k/2, radix = k is exactly Al-Fares et al.'s k-ary fat-tree (SIGCOMM'08).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.topology.graph import GraphBuilder, NodeKind, Topology


@dataclass(frozen=True, slots=True)
class LinkParams:
    """One link type: ``capacity_Bps`` per direction and ``latency_s`` per hop."""

    capacity_Bps: float
    latency_s: float


def _positive(field: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise FabricsimError(field, f"must be an integer >= {minimum}, got {value!r}")


def _host_count(field: str, hosts: int | None, ports: int) -> int:
    if hosts is None:
        return ports
    _positive(field, hosts)
    if hosts > ports:
        raise FabricsimError(field, f"{hosts} hosts exceed the {ports} host ports", f"use at most {ports}")
    return hosts


def nvswitch_domain(gpus: int, link: LinkParams, reduction: bool = True, name: str = "nvswitch") -> Topology:
    """One NVSwitch (or NVL72 NVLink-switch) domain: ``gpus`` GPUs on one switch node.

    The domain's switch chips are merged into one node; ``link.capacity_Bps`` is the GPU's total
    NVLink bandwidth per direction (e.g. 450e9 on H100, 900e9 on GB200).
    """
    _positive("gpus", gpus)
    graph = GraphBuilder()
    gpu_ids = graph.add_nodes(gpus, NodeKind.GPU)
    switch = graph.add_nodes(1, NodeKind.SWITCH, reduction=reduction)
    graph.connect(gpu_ids, switch, link.capacity_Bps, link.latency_s)
    return graph.build(name, gpu_ids, link.capacity_Bps)


def nvl72_domain(link: LinkParams = LinkParams(900e9, 0.6e-6)) -> Topology:
    """GB200 NVL72: 72 GPUs, 900 GB/s per direction each (NVIDIA GB200 NVL72 page), NVLS capable."""
    return nvswitch_domain(72, link, reduction=True, name="nvl72")


def _clos_above(
    graph: GraphBuilder,
    leaves: np.ndarray,
    shape: tuple[int, int, int],
    uplinks: tuple[LinkParams, LinkParams | None],
) -> None:
    """Add spines (2 tiers) or aggregation + core (3 tiers) above ``leaves``; ``shape`` = (``up``
    uplinks per leaf, switch radix, tiers: 2, 3 or 0 to pick by size); ``uplinks`` = (leaf-spine or
    edge-aggregation links, aggregation-core links or None for the same)."""
    up, radix, tiers = shape
    uplink, core = uplinks
    n_leaves = leaves.size
    if tiers == 2 or (tiers == 0 and n_leaves <= radix):
        if n_leaves > radix:
            raise FabricsimError("leaves", f"{n_leaves} leaves exceed the spine radix {radix}")
        if core is not None:
            raise FabricsimError("core_gbps", "this Clos has two tiers: no aggregation-core links to set",
                                 "drop core_gbps (spine_gbps sets the leaf-spine links)")  # fmt: skip
        spines = graph.add_nodes(up, NodeKind.SWITCH)
        graph.connect(leaves[:, None], spines[None, :], uplink.capacity_Bps, uplink.latency_s)
        return
    per_pod = max(1, radix // 2)
    pods = -(-n_leaves // per_pod)
    if pods > radix:
        raise FabricsimError("hosts", f"{pods} pods exceed a 3-tier Clos of radix {radix}", "use a larger radix")
    aggs = graph.add_nodes(pods * up, NodeKind.SWITCH).reshape(pods, up)
    pod_of_leaf = np.arange(n_leaves) // per_pod
    graph.connect(leaves[:, None], aggs[pod_of_leaf], uplink.capacity_Bps, uplink.latency_s)
    cores = graph.add_nodes(up * per_pod, NodeKind.SWITCH).reshape(up, per_pod)
    top = core or uplink
    graph.connect(aggs[:, :, None], cores[None, :, :], top.capacity_Bps, top.latency_s)


def fat_tree(
    k: int,
    link: LinkParams,
    hosts: int | None = None,
    spine: LinkParams | None = None,
    core: LinkParams | None = None,
) -> Topology:
    """k-ary fat-tree (Al-Fares et al., SIGCOMM'08): k pods, k^3/4 hosts, (k/2)^2 cores, full bisection
    (when ``spine``, the edge-aggregation links, and ``core``, the aggregation-core links (default
    ``spine``), are as fast as ``link``).

    ``hosts`` attaches only the first hosts (default all k^3/4); the switches are always all built.
    """
    _positive("k", k, 2)
    if k % 2:
        raise FabricsimError("k", f"a k-ary fat-tree needs an even k, got {k}", f"use k={k + 1}")
    half = k // 2
    count = _host_count("hosts", hosts, k**3 // 4)
    graph = GraphBuilder()
    host_ids = graph.add_nodes(count, NodeKind.GPU)
    edges = graph.add_nodes(k * half, NodeKind.SWITCH)
    graph.connect(host_ids, edges[np.arange(count) // half], link.capacity_Bps, link.latency_s)
    _clos_above(graph, edges, (half, k, 3), (spine or link, core))
    return graph.build(f"fat-tree-k{k}", host_ids, link.capacity_Bps, {"k": k})


def leaf_spine(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    link: LinkParams,
    oversubscription: float = 1.0,
    spine: LinkParams | None = None,
) -> Topology:
    """Two-tier leaf-spine; each leaf has one uplink to every spine.

    Oversubscription r = (hosts_per_leaf x line rate) / (leaf uplink capacity), so each uplink has
    hosts_per_leaf x line / (r x spines) bytes/s; ``spine`` gives the uplinks' capacity (and
    latency) instead, r then following from it (both at once are refused).
    """
    for field, value in (("leaves", leaves), ("spines", spines), ("hosts_per_leaf", hosts_per_leaf)):
        _positive(field, value)
    if not oversubscription >= 1.0:
        raise FabricsimError("oversubscription", f"must be >= 1, got {oversubscription}")
    graph = GraphBuilder()
    host_ids = graph.add_nodes(leaves * hosts_per_leaf, NodeKind.GPU)
    leaf_ids = graph.add_nodes(leaves, NodeKind.SWITCH)
    graph.connect(host_ids, np.repeat(leaf_ids, hosts_per_leaf), link.capacity_Bps, link.latency_s)
    if spine is not None and oversubscription != 1.0:
        raise FabricsimError("spine_gbps", "sets the uplink capacity, so oversubscription follows from it",
                             "give spine_gbps or oversubscription, not both")  # fmt: skip
    uplink = LinkParams(hosts_per_leaf * link.capacity_Bps / (oversubscription * spines), link.latency_s)
    if spine is not None:
        uplink, oversubscription = spine, hosts_per_leaf * link.capacity_Bps / (spines * spine.capacity_Bps)
    _clos_above(graph, leaf_ids, (spines, max(leaves, spines), 2), (uplink, None))
    meta = {"oversubscription": float(oversubscription)}
    return graph.build(f"leaf-spine-{leaves}x{spines}", host_ids, link.capacity_Bps, meta)


@dataclass(frozen=True, slots=True)
class RailSpec:
    """A rail-optimized Clos: ``nodes`` servers with ``rails`` NICs each (NIC i of every node on rail i).

    ``spine``: the switch-to-switch links (default ``nic``); ``core``: a 3-tier Clos's
    aggregation-core links (default ``spine``; refused with two tiers); ``tiers``: 2 forces two
    tiers (refused when the leaves outnumber the radix), 0 picks two or three by size
    (:func:`_clos_above`).
    """

    nodes: int
    rails: int
    radix: int
    nic: LinkParams
    oversubscription: float = 1.0
    spine: LinkParams | None = None
    tiers: int = 0
    core: LinkParams | None = None

    @property
    def leaf_down_ports(self) -> int:
        """NICs per leaf: the radix split down:up = r:1 (r = oversubscription)."""
        return max(1, round(self.radix * self.oversubscription / (1 + self.oversubscription)))


def rail_leaves(graph: GraphBuilder, nics: np.ndarray, spec: RailSpec) -> None:
    """Cable ``nics`` (shape nodes x rails) to rail leaves and a Clos above them.

    Leaf ports split down:up = r:1 (r = oversubscription); leaf (group, rail) serves the NICs of
    rail ``rail`` of the ``down`` nodes of ``group`` (DGX SuperPOD scalable-unit layout).
    """
    for field in ("nodes", "rails", "radix"):
        _positive(field, getattr(spec, field), 2 if field == "radix" else 1)
    down = spec.leaf_down_ports
    up = max(1, spec.radix - down)
    groups = -(-spec.nodes // down)
    leaves = graph.add_nodes(groups * spec.rails, NodeKind.SWITCH).reshape(groups, spec.rails)
    node_group = np.arange(spec.nodes) // down
    graph.connect(nics, leaves[node_group], spec.nic.capacity_Bps, spec.nic.latency_s)
    _clos_above(graph, leaves.ravel(), (up, spec.radix, spec.tiers), (spec.spine or spec.nic, spec.core))


def rail_optimized(spec: RailSpec) -> Topology:
    """Scale-out only: endpoints are the NICs (node-major, rail-minor), cabled per :func:`rail_leaves`."""
    graph = GraphBuilder()
    nics = graph.add_nodes(spec.nodes * spec.rails, NodeKind.GPU)
    rail_leaves(graph, nics.reshape(spec.nodes, spec.rails), spec)
    return graph.build(f"rail-optimized-{spec.nodes}x{spec.rails}", nics, spec.nic.capacity_Bps)


def dragonfly(
    a: int, p: int, h: int, link: LinkParams, spine: LinkParams | tuple[LinkParams, LinkParams] | None = None
) -> Topology:
    """Dragonfly (Kim et al., ISCA'08): g = a*h + 1 groups of ``a`` routers, ``p`` hosts and ``h``
    global links per router; routers of a group fully connected; one global link per group pair
    (consecutive arrangement: group i's global port q goes to group (i + q + 1) mod g). Local and
    global router links are ``spine`` (default ``link``), or ``spine`` = (local, global)."""
    for field, value in (("a", a), ("p", p), ("h", h)):
        _positive(field, value)
    groups = a * h + 1
    graph = GraphBuilder()
    host_ids = graph.add_nodes(groups * a * p, NodeKind.GPU)
    routers = graph.add_nodes(groups * a, NodeKind.SWITCH).reshape(groups, a)
    graph.connect(host_ids, np.repeat(routers.ravel(), p), link.capacity_Bps, link.latency_s)
    ia, ib = np.triu_indices(a, 1)
    local, global_link = spine if isinstance(spine, tuple) else (spine or link, spine or link)
    graph.connect(routers[:, ia], routers[:, ib], local.capacity_Bps, local.latency_s)
    group, port = np.meshgrid(np.arange(groups), np.arange(a * h), indexing="ij")
    peer = (group + port + 1) % groups
    peer_port = (group - peer - 1) % groups
    keep = group < peer
    src = routers[group[keep], port[keep] // h]
    dst = routers[peer[keep], peer_port[keep] // h]
    graph.connect(src, dst, global_link.capacity_Bps, global_link.latency_s)
    meta = {"a": a, "p": p, "h": h, "groups": groups}
    return graph.build(f"dragonfly-a{a}p{p}h{h}", host_ids, link.capacity_Bps, meta)


def torus(dims: tuple[int, ...], link: LinkParams, spine: LinkParams | None = None) -> Topology:
    """2D/3D torus: one router per grid point with one host; wrap-around links in every dimension
    (router links ``spine``, default ``link``)."""
    if not 1 <= len(dims) <= 3:
        raise FabricsimError("dims", f"a torus has 1 to 3 dimensions, got {len(dims)}", "e.g. dims=8x8x8")
    for size in dims:
        _positive("dims", size)
    count = int(np.prod(dims))
    graph = GraphBuilder()
    host_ids = graph.add_nodes(count, NodeKind.GPU)
    routers = graph.add_nodes(count, NodeKind.SWITCH)
    graph.connect(host_ids, routers, link.capacity_Bps, link.latency_s)
    grid = routers.reshape(dims)
    router_link = spine or link
    for axis, size in enumerate(dims):
        if size < 2:
            continue
        nxt = np.roll(grid, -1, axis=axis)
        if size == 2:  # the +1 and -1 neighbours coincide: one cable
            sl = [slice(None)] * len(dims)
            sl[axis] = slice(0, 1)
            graph.connect(grid[tuple(sl)], nxt[tuple(sl)], router_link.capacity_Bps, router_link.latency_s)
        else:
            graph.connect(grid, nxt, router_link.capacity_Bps, router_link.latency_s)
    name = "torus-" + "x".join(str(d) for d in dims)
    return graph.build(name, host_ids, link.capacity_Bps, {"dims": len(dims)})
