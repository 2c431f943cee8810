"""In-network reduction nodes: the aggregation tree of SHARP / NVLS over flagged switches (layer L2).

Switches flagged in ``Topology.reduction`` reduce data in flight: NVLS in an NVSwitch, SHARP in
InfiniBand switches. A schedule that uses them sends flows *to* and *from* switch nodes. Flows name
endpoints, so :func:`expose_nodes` returns a copy of the topology whose endpoint list also holds
those nodes (appended: host indices, and so every host-to-host route and ECMP hash, are unchanged;
routing already treats every non-GPU node as transit, so an exposed switch still forwards).

:func:`reduction_tree` builds SHARP's aggregation tree (Graham et al., "Scalable Hierarchical
Aggregation Protocol", COM-HPC 2016: a tree of aggregation nodes rooted at one switch, each
reducing its children's streams into one): the root is the reduction-capable node whose farthest
placed endpoint is nearest (least eccentricity in hops, ties by lowest node id); every other tree
node's parent is its lowest-id neighbour one hop nearer the root (GPUs are never transit). A node
that merges two or more children must itself be reduction-capable. Cost: one BFS per candidate root.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from fabricsim.errors import FabricsimError
from fabricsim.topology.graph import NodeKind, Topology

_ROOT_CHUNK = 128  # candidate roots per BFS batch: bounds the [candidates x nodes] distance matrix


@dataclass(frozen=True, slots=True)
class ReductionTree:
    """An aggregation tree over node ids ``nodes``: the given endpoints first (in order), then the
    switches. ``parent[i]`` indexes ``nodes`` (-1 at the root); ``depth[i]`` is hops to the root;
    ``up_latency_s[i]`` / ``down_latency_s[i]`` are the latencies of the cable to / from the parent
    (0 at the root)."""

    nodes: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    up_latency_s: np.ndarray
    down_latency_s: np.ndarray

    @property
    def root(self) -> int:
        return int(np.flatnonzero(self.parent < 0)[0])


def expose_nodes(topology: Topology, nodes: np.ndarray) -> tuple[Topology, np.ndarray]:
    """Copy of ``topology`` whose endpoints also list ``nodes`` (appended unless already endpoints),
    and the endpoint index of each of ``nodes``."""
    nodes = np.asarray(nodes, dtype=np.int64)
    index = np.full(topology.nodes, -1, dtype=np.int64)
    index[topology.endpoints] = np.arange(topology.hosts)
    new = np.unique(nodes[index[nodes] < 0])
    index[new] = topology.hosts + np.arange(new.size)
    if new.size == 0:
        return topology, index[nodes]
    endpoints = np.concatenate([topology.endpoints, new]).astype(np.int32)
    return replace(topology, endpoints=endpoints, name=f"{topology.name}+{new.size}reduction"), index[nodes]


def _toward(topology: Topology) -> sp.csr_matrix:
    """Reversed transit graph: an edge b -> a for each link a -> b into a non-GPU node b, so a BFS
    from a root gives every node's hops *to* it, never through a GPU."""
    transit = topology.node_kind != NodeKind.GPU
    ok = transit[topology.link_dst]
    data = np.ones(int(ok.sum()))
    return sp.csr_matrix((data, (topology.link_dst[ok], topology.link_src[ok])), shape=(topology.nodes,) * 2)


def _root(topology: Topology, graph: sp.csr_matrix, members: np.ndarray) -> tuple[int, np.ndarray]:
    """The least-eccentric reduction-capable node for ``members`` and every node's hops to it."""
    candidates = np.flatnonzero(topology.reduction & (topology.node_kind != NodeKind.GPU))
    if candidates.size == 0:
        raise FabricsimError(
            "algorithm", f"topology {topology.name!r} has no in-network reduction switch", "use ring or tree"
        )
    best, best_node = np.inf, -1
    for lo in range(0, candidates.size, _ROOT_CHUNK):
        chunk = candidates[lo : lo + _ROOT_CHUNK]
        hops = csgraph.shortest_path(graph, directed=True, unweighted=True, indices=chunk)
        eccentricity = hops[:, members].max(axis=1)
        pick = int(np.argmin(eccentricity))
        if eccentricity[pick] < best:
            best, best_node = float(eccentricity[pick]), int(chunk[pick])
    if not np.isfinite(best):
        raise FabricsimError(
            "algorithm", "no in-network reduction switch reaches every rank", "place the ranks under one reduction tree"
        )
    hops = csgraph.shortest_path(graph, directed=True, unweighted=True, indices=[best_node])[0]
    return best_node, hops


def _link_latency(topology: Topology, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Least latency (s) of the links src[i] -> dst[i]; inf where there is none."""
    want = src.astype(np.int64) * topology.nodes + dst
    if topology.links == 0:
        return np.full(want.size, np.inf)
    key = topology.link_src.astype(np.int64) * topology.nodes + topology.link_dst
    order = np.lexsort((topology.latency_s, key))  # by key, then least latency first
    key, latency = key[order], topology.latency_s[order]
    at = np.minimum(np.searchsorted(key, want), key.size - 1)
    return np.where(key[at] == want, latency[at], np.inf)


def _parents(topology: Topology, hops: np.ndarray) -> np.ndarray:
    """Each node's lowest-id neighbour one hop nearer the root over a link into a transit node."""
    src, dst = topology.link_src.astype(np.int64), topology.link_dst.astype(np.int64)
    good = (topology.node_kind[dst] != NodeKind.GPU) & np.isfinite(hops[src]) & (hops[dst] == hops[src] - 1)
    parent = np.full(topology.nodes, topology.nodes, dtype=np.int64)
    np.minimum.at(parent, src[good], dst[good])
    return np.where(parent == topology.nodes, -1, parent)


def reduction_tree(topology: Topology, members: np.ndarray) -> ReductionTree:
    """The aggregation tree joining the distinct nodes ``members`` (see module docstring).

    Raises FabricsimError (field ``algorithm``) when no reduction-capable node reaches them all or
    a node that would merge several streams cannot reduce.
    """
    members = np.asarray(members, dtype=np.int64)
    if np.unique(members).size != members.size:
        raise FabricsimError("placement", "in-network reduction needs one rank per endpoint")
    graph = _toward(topology)
    root, hops = _root(topology, graph, members)
    node_parent = _parents(topology, hops)
    nodes, frontier = list(members), members[members != root]
    seen = set(nodes)
    while frontier.size:
        ups = np.unique(node_parent[frontier])
        fresh = [int(u) for u in ups if int(u) not in seen]
        seen.update(fresh)
        nodes.extend(fresh)
        frontier = np.asarray([u for u in fresh if u != root], dtype=np.int64)
    nodes_a = np.asarray(nodes, dtype=np.int64)
    where = {int(v): i for i, v in enumerate(nodes_a)}
    parent_node = np.where(nodes_a == root, -1, node_parent[nodes_a])
    parent = np.asarray([where.get(int(p), -1) for p in parent_node], dtype=np.int64)
    _check_merges(topology, nodes_a, parent)
    has = parent >= 0
    up, down = np.zeros(nodes_a.size), np.zeros(nodes_a.size)
    up[has] = _link_latency(topology, nodes_a[has], parent_node[has])
    down[has] = _link_latency(topology, parent_node[has], nodes_a[has])
    down = np.where(np.isfinite(down), down, up)  # a failed down cable: routing detours, start as if up
    return ReductionTree(nodes_a, parent, hops[nodes_a].astype(np.int64), up, down)


def _check_merges(topology: Topology, nodes: np.ndarray, parent: np.ndarray) -> None:
    children = np.bincount(parent[parent >= 0], minlength=nodes.size)
    bad = np.flatnonzero((children >= 2) & ~topology.reduction[nodes])
    if bad.size:
        node = int(nodes[bad[0]])
        kind = NodeKind(int(topology.node_kind[node])).name.lower()
        raise FabricsimError(
            "algorithm",
            f"{kind} node {node} would merge {int(children[bad[0]])} streams but cannot reduce in the network",
            "flag its switches for in-network reduction, or use ring",
        )
