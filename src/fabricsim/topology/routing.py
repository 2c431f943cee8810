"""Equal-cost shortest-path routing: per-flow ECMP, packet spraying, adaptive (layer L2).

:class:`RouteTable` holds, for every *anchor* (a node an endpoint is cabled to: its ToR switch,
NVSwitch or NIC), the hop distance from every node to it, computed by BFS (scipy.sparse.csgraph)
over the graph without endpoints, so GPUs are never transit. All endpoints under one ToR share a
row: a fat-tree of 8,192 hosts needs 512 BFS, not 8,192. A flow to endpoint e then walks the
shortest-path DAG hop by hop: at node v its next hops are the neighbours u with the least
distance to e. The walk is vectorised over all flows at once (one numpy step per hop).

* ECMP: each switch picks one next hop by a seeded hash of (flow key, switch), as real switches
  hash the 5-tuple; flows between the same pair with the same ``label`` share a path.
* Spray: each switch splits the flow evenly over its next hops (per-packet spraying); a flow is
  one column of fractional link weights, and its rate is shared in those proportions.
* Adaptive: flows in start order each take the path whose most-loaded link (flows so far per
  byte/s of capacity) is least loaded (bottleneck DP over the flow's DAG), ties by hash.

Routes are a sparse links x flows matrix of weights (1 on a single path).

Flows between two chips of one torus domain (a TPU pod or cube, a Trn2 UltraServer: scale-up
switches cabled to each other) walk that domain's scale-up links only, as a slice's chips talk over
ICI and only slices talk over the data-center network (Cloud TPU docs, multislice); by hops alone
a job of two v6e pods sent 93% of its in-pod chip pairs over the 4-hop NIC path rather than ICI
paths of up to 16 hops (``RouteTable.scale_up``). A switched domain (NVSwitch) needs no such rule:
its 2 hops are always the shortest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.limits import cap, cap_hint
from fabricsim.topology.graph import NodeKind, Topology
from fabricsim.topology.inventory import switch_tiers

_UNREACHABLE = np.iinfo(np.int32).max // 4


class Routing(StrEnum):
    ECMP = "ecmp"
    SPRAY = "spray"
    ADAPTIVE = "adaptive"


def parse_routing(name: str) -> Routing:
    return parse_choice("routing", name, Routing)


@dataclass(frozen=True, slots=True)
class RouteTable:
    """Per-topology routing state; build with :func:`route_table`."""

    topology: Topology
    neighbor: np.ndarray  # int32 [nodes, max_degree], -1 padded
    neighbor_link: np.ndarray  # int32 [nodes, max_degree]
    distance: np.ndarray  # int32 [anchors, transit nodes], hops from a transit node to an anchor
    endpoint_anchor: np.ndarray  # int32 [hosts, max_anchors], rows of ``distance``, -1 padded
    transit_column: np.ndarray  # int64 [nodes], column of ``distance`` of a node, -1 for an endpoint
    scale_up: RouteTable | None = None  # the torus domains' links only (module docstring); None: no torus


@dataclass(frozen=True, slots=True)
class Routes:
    """``incidence[l, f]`` = share of flow f on link l; ``latency_s[f]`` = weighted path latency."""

    incidence: sp.csr_matrix
    latency_s: np.ndarray


def route_table(topology: Topology) -> RouteTable:
    """Adjacency padded per node plus BFS distances from every transit node (switch, NIC) to every
    anchor; endpoints are never transit, so they get no column. Cost O(anchors x links)."""
    transit = topology.node_kind != NodeKind.GPU
    tier = switch_tiers(topology, np.stack([topology.link_src, topology.link_dst], axis=1).astype(np.int64))
    scale_up = (topology.node_kind == NodeKind.SWITCH) & (tier == 0)
    joined = scale_up[topology.link_src] & scale_up[topology.link_dst]
    inner = None
    if joined.any() and np.any(transit & ~scale_up):  # a torus domain and a network besides it
        inner = _table(topology, scale_up)
    return replace(_table(topology, transit), scale_up=inner)


def _table(topology: Topology, transit: np.ndarray) -> RouteTable:
    """:func:`route_table` with only the ``transit`` nodes (a bool mask) as transit."""
    order = np.lexsort((topology.link_dst, topology.link_src))
    src, dst = topology.link_src[order], topology.link_dst[order]
    degree = np.bincount(src, minlength=topology.nodes)
    width = max(1, int(degree.max(initial=0)))
    slot = np.arange(src.size) - np.repeat(np.cumsum(degree) - degree, degree)
    neighbor = np.full((topology.nodes, width), -1, dtype=np.int32)
    neighbor_link = np.full((topology.nodes, width), -1, dtype=np.int32)
    neighbor[src, slot] = dst
    neighbor_link[src, slot] = order
    column = np.full(topology.nodes, -1, dtype=np.int64)
    column[transit] = np.arange(int(transit.sum()))
    ok = transit[src] & transit[dst]
    graph = sp.csr_matrix((np.ones(int(ok.sum())), (column[dst[ok]], column[src[ok]])), shape=(int(transit.sum()),) * 2)
    is_endpoint = np.zeros(topology.nodes, dtype=bool)
    is_endpoint[topology.endpoints] = True
    attach = is_endpoint[src] & transit[dst]
    anchors, anchor_row = np.unique(dst[attach], return_inverse=True)
    distance = _distances_to(graph, column[anchors], column[src[ok]], column[dst[ok]])
    endpoint_index = np.full(topology.nodes, -1, dtype=np.int64)
    endpoint_index[topology.endpoints] = np.arange(topology.hosts)
    owner = endpoint_index[src[attach]]
    per = np.bincount(owner, minlength=topology.hosts)
    endpoint_anchor = np.full((topology.hosts, max(1, int(per.max(initial=1)))), -1, dtype=np.int32)
    by_owner = np.argsort(owner, kind="stable")
    owner_sorted = owner[by_owner]
    rank = np.arange(owner.size) - (np.cumsum(per) - per)[owner_sorted]
    endpoint_anchor[owner_sorted, rank] = anchor_row[by_owner]
    return RouteTable(topology, neighbor, neighbor_link, distance, endpoint_anchor, column)


def _distances_to(graph: sp.csr_matrix, targets: np.ndarray, edge_src: np.ndarray, edge_dst: np.ndarray) -> np.ndarray:
    """BFS hops from every transit node to each of ``targets`` (rows), int32, ``_UNREACHABLE`` if none.

    ``graph`` holds the transit links reversed, so a BFS from a target walks towards its senders. A
    target entered by one transit link only (a NIC from its leaf) is one hop behind that link's
    source: its row is the source's plus one (itself 0), so only the other targets and those sources
    are searched (on a DGX fabric the leaves, not the thousands of NICs)."""
    in_degree = np.bincount(edge_dst, minlength=graph.shape[0])
    before = np.full(graph.shape[0], -1, dtype=np.int64)
    before[edge_dst] = edge_src  # the (only) sender of a node entered once
    single = in_degree[targets] == 1
    sources, where = np.unique(np.where(single, before[targets], targets), return_inverse=True)
    searched = csgraph.shortest_path(graph, directed=True, unweighted=True, indices=sources)
    searched = np.where(np.isfinite(searched), searched, _UNREACHABLE).astype(np.int32)
    behind = np.minimum(searched + np.int32(1), np.int32(_UNREACHABLE))  # one hop further, per source
    where = where.ravel()
    hops = np.empty((targets.size, graph.shape[0]), dtype=np.int32)  # each row written once: no big temporaries
    hops[~single] = searched[where[~single]]
    hops[single] = behind[where[single]]
    hops[np.arange(targets.size), targets] = 0
    return hops


def _distance_to(
    table: RouteTable, dst_node: np.ndarray, dst_host: np.ndarray, cand: np.ndarray, node: np.ndarray | None = None
) -> np.ndarray:
    """Hops from each candidate node ``cand[i, j]`` to endpoint ``dst_host[i]`` (``_UNREACHABLE`` if none).

    With ``node`` (``cand`` being its neighbour rows) the hops are found once per distinct (node,
    destination): the flows of a collective share most of them."""
    if node is not None and node.size > 1:
        key = node.astype(np.int64) * (table.topology.hosts + 1) + dst_host
        unique, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        if unique.size < key.size:
            return _distance_rows(table, dst_node[first], dst_host[first], cand[first])[inverse.ravel()]
    return _distance_rows(table, dst_node, dst_host, cand)


def _distance_rows(table: RouteTable, dst_node: np.ndarray, dst_host: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """:func:`_distance_to` row by row: distances are gathered for the transit candidates only (a
    padded neighbour row is mostly empty slots and endpoints), in int32 (``_UNREACHABLE`` + 1 fits)."""
    column = table.transit_column[np.maximum(cand, 0)]  # -1: an endpoint, never transit
    at, slot = np.nonzero((cand >= 0) & (column >= 0))
    target = column[at, slot]
    anchors = table.endpoint_anchor[dst_host[at]]  # [entries, J]
    found = np.full(at.size, _UNREACHABLE, dtype=np.int32)
    for j in range(anchors.shape[1]):
        row = anchors[:, j]
        d = table.distance[np.maximum(row, 0), target] + np.int32(1)
        found = np.minimum(found, np.where(row >= 0, d, np.int32(_UNREACHABLE)))
    best = np.full(cand.shape, _UNREACHABLE, dtype=np.int32)
    best[at, slot] = found
    best[cand == dst_node[:, None]] = 0
    return best


def unroutable(table: RouteTable, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Mask of the flows ``src[i] -> dst[i]`` (endpoint ids) that have no path (e.g. after failed
    links): none of the source's first hops reaches the destination. A flow to itself is routable.

    Checking the first hop suffices: distances are exact BFS hops, so a next hop at finite
    distance always has a neighbour one hop nearer, down to the destination.
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    dst_node = table.topology.endpoints[dst]
    cand = table.neighbor[table.topology.endpoints[src]]
    reach = _distance_to(table, dst_node, dst, cand).min(axis=1, initial=_UNREACHABLE) < _UNREACHABLE
    return ~reach & (src != dst)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (Steele et al., OOPSLA'14): a fast, well-spread 64-bit hash."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def flow_keys(src: np.ndarray, dst: np.ndarray, label: np.ndarray, seed: int) -> np.ndarray:
    """The ECMP hash key of each flow (stands in for the 5-tuple), seeded."""
    with np.errstate(over="ignore"):
        key = _mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + _mix(src.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)))
        key = _mix(key ^ dst.astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
        return _mix(key + label.astype(np.uint64))


_CHUNK = 16_384  # flows walked at once: bounds the [flows x max_degree] temporaries
_STATES = 2**17  # (flow, node) states of one hop computed at once (a sprayed flow has thousands)
_SAMPLE = 64  # sprayed flows walked first to estimate the whole set's link entries (a quick refusal)


@dataclass(frozen=True, slots=True)
class _Walk:
    """Flow ``flow[i]`` puts share ``weight[i]`` on link ``link[i]`` at hop ``hop[i]``."""

    flow: np.ndarray
    link: np.ndarray
    weight: np.ndarray
    hop: np.ndarray


def _next_hops(
    table: RouteTable, flow: np.ndarray, node: np.ndarray, dst_host: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate next hops of each (flow, node) and the mask of the equal-cost (shortest) ones."""
    cand = table.neighbor[node]
    hops = _distance_to(table, table.topology.endpoints[dst_host[flow]], dst_host[flow], cand, node)
    hops = _no_nic_turn(table, node, cand, hops)
    least = hops.min(axis=1)
    if np.any(least >= _UNREACHABLE):
        raise _no_path(table.topology, int(flow[np.argmax(least >= _UNREACHABLE)]), dst_host)
    return cand, hops == least[:, None]


def _no_nic_turn(table: RouteTable, node: np.ndarray, cand: np.ndarray, hops: np.ndarray) -> np.ndarray:
    """``hops`` without the turn endpoint -> NIC -> endpoint where the source has another way: a NIC
    forwards between its host and the network, it does not hand one chip's traffic to another chip
    of its host (those talk over the scale-up links). Without this rule two GPUs sharing a NIC
    (:mod:`fabricsim.topology.system`) would be 2 hops apart through it, nearer than over NVSwitch
    (2, a tie) or a torus (3 and more). Only a flow's first hop (``node`` an endpoint) can make it."""
    start = table.transit_column[node] < 0
    if not start.any():
        return hops
    kind = table.topology.node_kind[np.maximum(cand, 0)]
    turn = start[:, None] & (cand >= 0) & (kind == NodeKind.NIC) & (hops == 1)
    other = np.where(turn, _UNREACHABLE, hops)
    keep = other.min(axis=1) < _UNREACHABLE  # the turn stays the route only where nothing else reaches
    return np.where(keep[:, None], other, hops)


def _no_path(topology: Topology, flow: int, dst_host: np.ndarray) -> FabricsimError:
    """The one-line refusal of a flow with no path: blame failed links only where links failed."""
    failed = int(topology.meta.get("failed_links", 0))
    where = f"no path for flow {flow} to endpoint {int(dst_host[flow])}"
    if failed:
        return FabricsimError("topology", f"{where} with {failed} links failed", "fail fewer links")
    return FabricsimError("topology", f"{where}: {topology.name} does not connect them", "check its cabling")


def _hop(
    table: RouteTable, state: tuple[np.ndarray, np.ndarray, np.ndarray], dst_host: np.ndarray, keys: np.ndarray | None,
    hop: int,
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One hop of the walk for the states (flow, node, weight): the link entries it adds and the
    states it moves to (those not yet at their destination)."""
    flow, node, weight = state
    cand, mask = _next_hops(table, flow, node, dst_host)
    count = mask.sum(axis=1)
    if keys is not None:
        with np.errstate(over="ignore"):
            pick = (
                _mix(keys[flow] ^ _mix(node.astype(np.uint64) + np.uint64(hop))) % count.astype(np.uint64)
            ).astype(np.int64)
        mask &= (np.cumsum(mask, axis=1) - 1) == pick[:, None]
    rows, cols = np.nonzero(mask)
    share = weight[rows] / (1.0 if keys is not None else count[rows])
    flow, nxt = flow[rows], cand[rows, cols].astype(np.int64)
    entries = (flow, table.neighbor_link[node[rows], cols], share, np.full(rows.size, hop))
    going = nxt != table.topology.endpoints[dst_host[flow]]
    return entries, (flow[going], nxt[going], share[going])


def _walk(
    table: RouteTable, src_host: np.ndarray, dst_host: np.ndarray, keys: np.ndarray | None, budget: int
) -> _Walk:
    """Walk every flow's shortest-path DAG: one next hop by hash (``keys``) or an even split (None).

    A hop runs over blocks of ``_STATES`` (flow, node) states, so a sprayed flow's thousands of
    states never make one [states x degree] temporary; more than ``budget`` link entries raise."""
    nodes = np.int64(table.topology.nodes)
    flow = np.flatnonzero(src_host != dst_host)
    node = table.topology.endpoints[src_host[flow]].astype(np.int64)
    weight = np.ones(flow.size)
    parts: list[tuple[np.ndarray, ...]] = []
    entries = 0
    for hop in range(table.topology.nodes):
        if flow.size == 0:
            break
        if entries + flow.size > budget:
            raise _too_many_entries(keys is None)
        moves = []
        for lo in range(0, flow.size, _STATES):
            block = slice(lo, lo + _STATES)
            added, moved = _hop(table, (flow[block], node[block], weight[block]), dst_host, keys, hop)
            entries += added[0].size
            if entries > budget:  # checked per block: a sprayed hop can multiply the states by the degree
                raise _too_many_entries(keys is None)
            parts.append(added)
            moves.append(moved)
        flow, nxt, share = (np.concatenate([moved[i] for moved in moves]) for i in range(3))
        merged, inverse = np.unique(flow * nodes + nxt, return_inverse=True)
        weight = np.bincount(inverse.ravel(), weights=share, minlength=merged.size)
        flow, node = merged // nodes, merged % nodes
    columns = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, dtype=np.int64) for i in range(4)]
    return _Walk(columns[0].astype(np.int64), columns[1].astype(np.int64), columns[2].astype(float), columns[3])


def _too_many_entries(sprayed: bool) -> FabricsimError:
    """The ``ROUTE_ENTRIES`` refusal: a sprayed or adaptive walk of many flows over a big fabric."""
    how = "sprayed (spray/adaptive) routes" if sprayed else "routes"
    fix = cap_hint("ROUTE_ENTRIES")
    fix = f"use --routing ecmp or fewer --hosts, or {fix}" if sprayed else fix
    return FabricsimError("routing", f"{how} of these flows exceed the cap of {cap('ROUTE_ENTRIES')} link entries", fix)


def _walk_tiers(table: RouteTable, src: np.ndarray, dst: np.ndarray, keys: np.ndarray | None) -> _Walk:
    """:func:`_walk_chunked`, the flows that stay inside a torus domain on its scale-up links
    (module docstring), under one ``ROUTE_ENTRIES`` budget."""
    budget = cap("ROUTE_ENTRIES")
    if table.scale_up is None:
        return _walk_chunked(table, src, dst, keys, budget)
    inside = ~unroutable(table.scale_up, src, dst)
    parts = []
    for tier, mask in ((table.scale_up, inside), (table, ~inside)):
        picked = np.flatnonzero(mask)
        if picked.size:
            walk = _walk_chunked(tier, src[picked], dst[picked], None if keys is None else keys[picked], budget)
            budget -= walk.flow.size
            parts.append(_Walk(picked[walk.flow], walk.link, walk.weight, walk.hop))
    if not parts:
        return _Walk(*(np.zeros(0, dtype=np.int64) for _ in range(4)))
    return _Walk(*(np.concatenate([getattr(p, n) for p in parts]) for n in ("flow", "link", "weight", "hop")))


def _walk_chunked(
    table: RouteTable, src: np.ndarray, dst: np.ndarray, keys: np.ndarray | None, budget: int
) -> _Walk:
    parts = []
    if keys is None and src.size > _SAMPLE:  # sprayed: refuse at once if the first flows' DAGs, scaled, overflow
        sample = _walk(table, src[:_SAMPLE], dst[:_SAMPLE], None, budget)
        if sample.flow.size * (src.size / _SAMPLE) > budget:
            raise _too_many_entries(True)
    for lo in range(0, src.size, _CHUNK):
        hi = min(src.size, lo + _CHUNK)
        part = _walk(table, src[lo:hi], dst[lo:hi], None if keys is None else keys[lo:hi], budget)
        budget -= part.flow.size
        parts.append(_Walk(part.flow + lo, part.link, part.weight, part.hop))
    if not parts:
        return _Walk(*(np.zeros(0, dtype=np.int64) for _ in range(4)))
    return _Walk(*(np.concatenate([getattr(p, n) for p in parts]) for n in ("flow", "link", "weight", "hop")))


@dataclass(frozen=True, slots=True)
class FlowEnds:
    """What routing needs of a flow set: endpoint indices, start order and hash labels."""

    src: np.ndarray
    dst: np.ndarray
    start_s: np.ndarray
    label: np.ndarray


def route(table: RouteTable, ends: FlowEnds, routing: Routing, seed: int) -> Routes:
    """Route every flow; return the links x flows share matrix and per-flow path latency (s)."""
    hosts = table.topology.hosts
    for field, ids in (("src", ends.src), ("dst", ends.dst)):
        if ids.size and (ids.min() < 0 or ids.max() >= hosts):
            raise FabricsimError(field, f"endpoint ids must be in [0, {hosts})", "the topology is too small")
    keys = flow_keys(ends.src, ends.dst, ends.label, seed)
    if routing == Routing.ECMP:
        walk = _walk_tiers(table, ends.src, ends.dst, keys)
    else:
        walk = _walk_tiers(table, ends.src, ends.dst, None)
        if routing == Routing.ADAPTIVE:
            walk = _adaptive(table, walk, ends, keys)
    shape = (table.topology.links, ends.src.size)
    incidence = sp.csr_matrix((walk.weight, (walk.link, walk.flow)), shape=shape)
    latency = incidence.T @ table.topology.latency_s
    return Routes(incidence, np.asarray(latency, dtype=float))


def _adaptive(table: RouteTable, dag: _Walk, ends: FlowEnds, keys: np.ndarray) -> _Walk:
    """Pick, flow by flow in start order, the path of least bottleneck load over its DAG."""
    topo = table.topology
    load = np.zeros(topo.links)
    by_flow = np.argsort(dag.flow, kind="stable")
    bounds = np.searchsorted(dag.flow[by_flow], np.arange(ends.src.size + 1))
    chosen: list[np.ndarray] = []
    flows: list[np.ndarray] = []
    for f in np.lexsort((np.arange(ends.src.size), ends.start_s)):
        entries = by_flow[bounds[f] : bounds[f + 1]]
        if entries.size == 0:
            continue
        path = _least_loaded(topo, dag.link[entries], dag.hop[entries], load, int(keys[f] % np.uint64(1 << 31)))
        load[path] += 1.0 / topo.capacity_Bps[path]
        chosen.append(path)
        flows.append(np.full(path.size, f))
    link = np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)
    flow = np.concatenate(flows) if flows else np.zeros(0, dtype=np.int64)
    return _Walk(flow, link, np.ones(link.size), np.zeros(link.size, dtype=np.int64))


def _least_loaded(topo: Topology, links: np.ndarray, hops: np.ndarray, load: np.ndarray, salt: int) -> np.ndarray:
    """Bottleneck-optimal path through a DAG given as links with hop indices (DP from the end)."""
    cost = load[links] + 1.0 / topo.capacity_Bps[links]
    best: dict[int, float] = {}
    value = np.empty(links.size)
    for i in np.argsort(-hops, kind="stable"):
        value[i] = max(cost[i], best.get(int(topo.link_dst[links[i]]), 0.0))
        node = int(topo.link_src[links[i]])
        best[node] = min(best.get(node, np.inf), value[i])
    path = []
    node = int(topo.link_src[links[hops == 0][0]])
    for hop in range(int(hops.max()) + 1):
        here = np.flatnonzero((hops == hop) & (topo.link_src[links] == node))
        ties = here[value[here] <= value[here].min() * (1 + 1e-12)]
        pick = ties[(salt + hop) % ties.size]
        path.append(links[pick])
        node = int(topo.link_dst[links[pick]])
    return np.asarray(path, dtype=np.int64)
