"""Rank placement on a fabric, and the switch tier a pair of endpoints crosses (layer L2).

A job's GPU rank g runs on endpoint ``host_of_gpu[g]`` of a :class:`~fabricsim.topology.graph.Topology`.
Ranks are placed on whole nodes (``gpus_per_node`` consecutive endpoints; the GPUs of a node keep
their order), the way cluster schedulers allocate:

* ``packed``: topology-aware, one leaf group after another in fabric order (the groups of one pod
  first), so a job fills a leaf group before it needs the spines, as Slurm's topology/tree plugin
  tries to allocate under the lowest common switch.
* ``spread``: round-robin over the leaf groups (the first free node of every group, then the second, ...).
* ``random:SEED``: ``numpy.random.default_rng(SEED).permutation`` of the free nodes (sorted first).
* ``FILE``: one endpoint index per GPU rank (whitespace separated, ``#`` comments), distinct, in range.

A *leaf group* is the set of nodes whose scale-out first-hop switches are the same: the tier-1
switches of :func:`~fabricsim.topology.inventory.switch_tiers` cabled to the node's NICs (or to its
endpoints when the graph has no NIC, as builder topologies). On a rail-optimized fabric every node
of a scalable unit reaches the same rail leaves, so the unit is one group; on a leaf-spine with
hosts cabled straight to leaves a group is the hosts of one leaf.

Megatron-Core numbers ranks TP innermost, then CP, EP/DP, PP outermost; the workload's payloads
(``group_gpus``, ``group_stride``) already use that numbering, so a group of ranks ``r`` runs on the
endpoints ``host_of_gpu[r]``.

:func:`pair_tiers` names the highest switch tier (:data:`TIERS`) on the path between two endpoints,
from per-endpoint ids computed once per topology (:class:`TierMap`), so ~10^5 pairs take a few numpy
passes. Trees (Clos, fat-tree, leaf-spine, rail-optimized): 0 in one scale-up domain (an NVSwitch
node, a full mesh, or the cabled ICI routers of one torus domain of a system graph) or the same
endpoint, 1 under a common leaf, 2 under a common pod (leaves joined through tier-2 switches: every
leaf of a 2-tier Clos), else 3. Fabrics with cables between switches of one
tier (dragonfly, torus) count switches on the shortest path instead, capped at 3: 1 on one router,
2 on adjacent routers, 3 beyond. An endpoint without a first-hop switch (none cabled) is tier 3 to
every endpoint outside its scale-up domain.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from fabricsim.errors import FabricsimError, did_you_mean
from fabricsim.textfile import read_text
from fabricsim.topology.graph import NodeKind, Topology
from fabricsim.topology.inventory import switch_tiers

__all__ = [
    "PLACEMENT_HELP",
    "TIERS",
    "Placement",
    "PlacementKind",
    "PlacementPolicy",
    "TierMap",
    "leaf_groups",
    "pair_tiers",
    "parse_placement",
    "place",
    "tier_bytes",
    "tier_map",
]

FIELD = "placement"
PLACEMENT_HELP = (
    "packed (fill one leaf group, then the next) | spread (round-robin over leaf groups) | "
    "random:SEED | FILE (one endpoint index per GPU rank)"
)
TIERS = ("scale-up", "leaf", "spine", "core")
_TOP = len(TIERS) - 1
_MAX_SEED = 2**63 - 1  # seeds are 0..2^63-1 everywhere in fabricsim (api.goodput, api.packet_traffic)
_MAX_DIGITS = 18  # an endpoint index of up to 18 digits fits int64; no fabric is near that
_INDEX = re.compile(f"[0-9]{{1,{_MAX_DIGITS}}}")  # ASCII digits only (str.isdigit takes any script's)
_CACHE_SIZE = 8  # topologies whose TierMap is kept: a run uses one fabric (a few for sweeps)


class PlacementKind(StrEnum):
    PACKED = "packed"
    SPREAD = "spread"
    RANDOM = "random"
    FILE = "file"


@dataclass(frozen=True, slots=True)
class PlacementPolicy:
    """A parsed ``--placement``: ``kind``, ``seed`` (random), ``hosts`` (file: endpoint per rank),
    ``text`` as the user wrote it."""

    kind: PlacementKind
    seed: int | None = None
    hosts: tuple[int, ...] | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class Placement:
    """``host_of_gpu`` int64 [gpus]: endpoint of GPU rank g; ``nodes``: node indices used, in job order."""

    policy: str
    host_of_gpu: np.ndarray
    nodes: np.ndarray


def parse_placement(text: str) -> PlacementPolicy:
    """``packed``, ``spread``, ``random:SEED`` or the path of a FILE (module docstring); anything
    else is a one-line :class:`FabricsimError` naming ``placement``."""
    given = str(text).strip()
    word = given.lower()
    if word in (PlacementKind.PACKED, PlacementKind.SPREAD):
        return PlacementPolicy(PlacementKind(word), text=given)
    if word == "random" or word.startswith("random:"):
        return PlacementPolicy(PlacementKind.RANDOM, seed=_seed(given.partition(":")[2].strip()), text=given)
    if not given:
        raise FabricsimError(FIELD, "empty", f"give {PLACEMENT_HELP}")
    if not os.path.lexists(given):
        choices = ("packed", "spread", "random:SEED")
        problem = f"{given!r} is not packed, spread, random:SEED or an existing file"
        raise FabricsimError(FIELD, problem, did_you_mean(word, choices))
    hosts = _read_hosts(given)
    return PlacementPolicy(PlacementKind.FILE, hosts=hosts, text=given)


def _seed(text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,19}", text) or int(text) > _MAX_SEED:
        raise FabricsimError(FIELD, f"random needs a seed in 0..2^63-1, got {text!r}", "write e.g. random:1")
    return int(text)


def _read_hosts(path: str) -> tuple[int, ...]:
    """Endpoint indices of a placement file, one per GPU rank; distinct non-negative integers."""
    hosts: list[int] = []
    first_rank: dict[int, int] = {}
    for number, line in enumerate(read_text(path, FIELD).splitlines(), start=1):
        for token in line.partition("#")[0].split():
            if not _INDEX.fullmatch(token):
                problem = f"{path} line {number}: {token[:20]!r} is not an endpoint index"
                raise FabricsimError(FIELD, problem, "write one non-negative integer per GPU rank")
            host = int(token)
            if host in first_rank:
                problem = f"{path} line {number}: endpoint {host} is given to ranks {first_rank[host]} and {len(hosts)}"
                raise FabricsimError(FIELD, problem, "give every GPU rank its own endpoint")
            first_rank[host] = len(hosts)
            hosts.append(host)
    if not hosts:
        raise FabricsimError(FIELD, f"{path} lists no endpoint", "write one endpoint index per GPU rank")
    return tuple(hosts)


def place(
    topology: Topology, gpus: int, gpus_per_node: int, policy: PlacementPolicy, free_nodes: np.ndarray | None = None
) -> Placement:
    """Endpoints of a job's ``gpus`` ranks on ``topology`` under ``policy`` (module docstring).

    ``free_nodes`` restricts the job to those node indices (several jobs on one fabric: the nodes
    no earlier job took); default every node. Cost O(endpoints) after :func:`tier_map`.
    """
    per_node, total = _node_shape(topology, gpus, gpus_per_node)
    free = _free_nodes(free_nodes, total)
    if policy.kind == PlacementKind.FILE:
        return _from_file(topology, gpus, per_node, policy, None if free_nodes is None else free)
    need = -(-gpus // per_node)
    if need > free.size:
        problem = f"the job needs {need} nodes of {per_node} GPUs but {free.size} of the fabric's {total} are free"
        raise FabricsimError(FIELD, problem, "use fewer GPUs or a larger fabric")
    nodes = _node_order(topology, per_node, policy, free)[:need]
    host_of_gpu = (nodes[:, None] * per_node + np.arange(per_node)).ravel()[:gpus]
    return Placement(policy.text, _frozen(host_of_gpu), _frozen(nodes))


def _frozen(values: np.ndarray) -> np.ndarray:
    values = np.ascontiguousarray(values, dtype=np.int64)
    values.setflags(write=False)
    return values


def _node_shape(topology: Topology, gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """GPUs per node (at most the endpoints: a one-node system graph holds fewer) and node count."""
    for name, value in (("gpus", gpus), ("gpus_per_node", gpus_per_node)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise FabricsimError(name, f"must be a positive integer, got {value!r}")
    per_node = min(int(gpus_per_node), topology.hosts)
    if topology.hosts % per_node:
        problem = f"the fabric's {topology.hosts} endpoints are not whole nodes of {per_node} GPUs"
        raise FabricsimError(FIELD, problem, "give a fabric with a multiple of the node's GPUs as endpoints")
    if gpus > topology.hosts:
        problem = f"{gpus} GPUs exceed the fabric's {topology.hosts} endpoints"
        raise FabricsimError(FIELD, problem, "use a larger fabric")
    return per_node, topology.hosts // per_node


def _free_nodes(free_nodes: np.ndarray | None, total: int) -> np.ndarray:
    if free_nodes is None:
        return np.arange(total, dtype=np.int64)
    free = np.asarray(free_nodes)
    if free.ndim != 1 or (free.size and not np.issubdtype(free.dtype, np.integer)):
        raise FabricsimError(FIELD, "free nodes must be a list of node indices")
    free = np.sort(free.astype(np.int64))
    if free.size and (free[0] < 0 or free[-1] >= total or np.any(free[1:] == free[:-1])):
        raise FabricsimError(FIELD, f"free nodes must be distinct node indices in 0..{total - 1}")
    return free


def _node_order(topology: Topology, per_node: int, policy: PlacementPolicy, free: np.ndarray) -> np.ndarray:
    """The free nodes in the order the policy takes them."""
    if policy.kind == PlacementKind.RANDOM:
        return np.random.default_rng(policy.seed).permutation(free)
    group = leaf_groups(topology, per_node)[free]
    if policy.kind == PlacementKind.PACKED:
        return free[np.lexsort((free, group))]
    by_group = np.lexsort((free, group))  # spread: k-th free node of every group, k = 0, 1, ...
    sorted_group = group[by_group]
    starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
    sizes = np.diff(np.r_[starts, sorted_group.size])
    rank = np.arange(sorted_group.size) - np.repeat(starts, sizes)
    return free[by_group][np.lexsort((sorted_group, rank))]


def _from_file(
    topology: Topology, gpus: int, per_node: int, policy: PlacementPolicy, free: np.ndarray | None
) -> Placement:
    """Check a FILE placement against the job and the fabric (count, range, distinct, free nodes)."""
    hosts = policy.hosts or ()
    if len(hosts) != gpus:
        problem = f"{policy.text} gives {len(hosts)} endpoints for {gpus} GPU ranks"
        raise FabricsimError(FIELD, problem, "write one endpoint index per GPU rank")
    for rank, host in enumerate(hosts):
        if host >= topology.hosts:
            problem = f"{policy.text}: rank {rank}'s endpoint {host} is not one of the fabric's {topology.hosts}"
            raise FabricsimError(FIELD, problem, f"use endpoint indices 0..{topology.hosts - 1}")
    host_of_gpu = np.asarray(hosts, dtype=np.int64)
    if np.unique(host_of_gpu).size != gpus:
        raise FabricsimError(FIELD, f"{policy.text} gives one endpoint to several ranks", "give every rank its own")
    node_of = host_of_gpu // per_node
    if free is not None:
        taken = ~np.isin(node_of, free)
        if taken.any():
            rank = int(np.argmax(taken))
            problem = f"{policy.text}: rank {rank}'s endpoint {hosts[rank]} is on node {node_of[rank]}, not free"
            raise FabricsimError(FIELD, problem, "place the job on nodes no other job holds")
    first = np.unique(node_of, return_index=True)[1]
    return Placement(policy.text, _frozen(host_of_gpu), _frozen(node_of[np.sort(first)]))


def leaf_groups(topology: Topology, gpus_per_node: int) -> np.ndarray:
    """Leaf group of every node (int64 [nodes]), numbered in packed order: pods in the order of
    their first node, then groups by first node. Nodes with no first-hop switch form one group."""
    tiers = tier_map(topology)
    per_node = min(gpus_per_node, topology.hosts)
    nodes = topology.hosts // per_node
    leaves = np.sort(tiers.leaf[: nodes * per_node].reshape(nodes, -1), axis=1)
    leaves[:, 1:][leaves[:, 1:] == leaves[:, :-1]] = -1  # a set: drop repeats
    keys, first, group = np.unique(np.sort(leaves, axis=1), axis=0, return_index=True, return_inverse=True)
    pods = tiers.pod[: nodes * per_node].reshape(nodes, -1)
    node_pod = np.where(pods >= 0, pods, np.iinfo(np.int64).max).min(axis=1)
    pods_used, pod_of_group = np.unique(node_pod[first], return_inverse=True)
    pod_first = np.full(pods_used.size, nodes, dtype=np.int64)  # a pod's first node
    np.minimum.at(pod_first, pod_of_group, first)
    order = np.lexsort((first, pod_first[pod_of_group]))
    rank = np.empty(keys.shape[0], dtype=np.int64)
    rank[order] = np.arange(keys.shape[0])
    return rank[group.ravel()]


@dataclass(frozen=True, slots=True)
class TierMap:
    """Per-endpoint ids for :func:`pair_tiers`; build with :func:`tier_map` (cached per topology)."""

    domain: np.ndarray  # int64 [hosts], scale-up switch node, or -1 - endpoint when none
    leaf: np.ndarray  # int64 [hosts, k], first-hop switch nodes, -1 padded
    pod: np.ndarray  # int64 [hosts, k], component of the leaf over tiers 1-2, -1 padded
    adjacent: np.ndarray | None  # sorted int64 keys a*nodes+b of switch pairs cabled; None for a tree
    nodes: int

    def __call__(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Tier index (into :data:`TIERS`) of every pair ``src[i] -> dst[i]`` (endpoint indices), int64."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if src.shape != dst.shape:
            raise ValueError(f"src and dst differ in shape: {src.shape} vs {dst.shape}")
        hosts = self.domain.size
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= hosts):
            raise ValueError(f"endpoint indices must be in 0..{hosts - 1}")
        best = np.full(src.shape, _TOP, dtype=np.int64)
        width = self.leaf.shape[1]
        for i in range(width):
            a = self.leaf[src, i]
            for j in range(width):
                b = self.leaf[dst, j]
                far = self._far(a, b, self.pod[src, i] == self.pod[dst, j])
                tier = np.where(a == b, 1, far)
                best = np.minimum(best, np.where((a < 0) | (b < 0), _TOP, tier))
        local = (self.domain[src] == self.domain[dst]) | (src == dst)
        return np.where(local, 0, best)

    def _far(self, a: np.ndarray, b: np.ndarray, same_pod: np.ndarray) -> np.ndarray:
        """Tier between different first-hop switches: by pod (tree) or by adjacency (peer fabrics)."""
        if self.adjacent is None:
            return np.where(same_pod, 2, _TOP)
        if self.adjacent.size == 0:
            return np.full(a.shape, _TOP, dtype=np.int64)
        key = a * self.nodes + b
        at = np.minimum(np.searchsorted(self.adjacent, key), self.adjacent.size - 1)
        return np.where(self.adjacent[at] == key, 2, _TOP)


_cache: OrderedDict[int, tuple[Topology, TierMap]] = OrderedDict()
_cache_lock = threading.Lock()


def tier_map(topology: Topology) -> TierMap:
    """The :class:`TierMap` of ``topology``, built once: the last few are kept by identity (the entry
    holds the topology, so its id cannot be reused while cached). Cost O(tiers x links)."""
    with _cache_lock:
        hit = _cache.get(id(topology))
        if hit is not None and hit[0] is topology:
            _cache.move_to_end(id(topology))
            return hit[1]
    built = _build_tier_map(topology)
    with _cache_lock:
        _cache[id(topology)] = (topology, built)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return built


def _build_tier_map(topology: Topology) -> TierMap:
    src, dst = topology.link_src.astype(np.int64), topology.link_dst.astype(np.int64)
    tier = switch_tiers(topology, np.stack([src, dst], axis=1))
    switch = topology.node_kind == NodeKind.SWITCH
    index = np.full(topology.nodes, -1, dtype=np.int64)
    index[topology.endpoints] = np.arange(topology.hosts)
    domain = -1 - np.arange(topology.hosts, dtype=np.int64)
    up = (index[src] >= 0) & switch[dst] & (tier[dst] == 0)
    domain[index[src[up]]] = dst[up]
    domain = _torus_domains(domain, src, dst, switch & (tier == 0))
    domain = _mesh_domains(domain, index[src], index[dst])
    leaf = _padded(_first_hops(topology, tier, index))
    between = switch[src] & switch[dst]
    peer = bool(np.any(between & (tier[src] == tier[dst]) & (tier[src] >= 1)))
    low = between & (tier[src] >= 1) & (tier[src] <= 2) & (tier[dst] >= 1) & (tier[dst] <= 2)
    pods = sp.csr_matrix((np.ones(int(low.sum())), (src[low], dst[low])), shape=(topology.nodes,) * 2)
    label = csgraph.connected_components(pods, directed=False)[1].astype(np.int64)
    pod = np.where(leaf >= 0, label[np.maximum(leaf, 0)], -1)
    adjacent = np.unique(src[between] * topology.nodes + dst[between]) if peer else None
    return TierMap(domain, leaf, pod, adjacent, topology.nodes)


def _torus_domains(domain: np.ndarray, src: np.ndarray, dst: np.ndarray, scale_up: np.ndarray) -> np.ndarray:
    """``domain`` with scale-up switches cabled to each other (the per-chip ICI routers of a torus
    domain: a TPU cube, an OCS slice, a Trn2 UltraServer) as one domain, named by its lowest node id:
    their chips talk over the scale-up links only. ``scale_up``: per node, a tier-0 switch."""
    joined = scale_up[src] & scale_up[dst]
    if not joined.any():
        return domain
    nodes = scale_up.size
    links = sp.csr_matrix((np.ones(int(joined.sum())), (src[joined], dst[joined])), shape=(nodes, nodes))
    component = csgraph.connected_components(links, directed=False)[1].astype(np.int64)
    lowest = np.full(int(component.max()) + 1, nodes, dtype=np.int64)
    np.minimum.at(lowest, component, np.arange(nodes, dtype=np.int64))
    return np.where(domain >= 0, lowest[component[np.maximum(domain, 0)]], domain)


def _mesh_domains(domain: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``domain`` with every switchless (full-mesh) scale-up domain as one domain: endpoints cabled
    to each other directly (``src``/``dst`` endpoint indices of the links, -1 for other nodes) share
    the id -1 - hosts - component, clear of switch ids (>= 0) and lone endpoints' -1 - endpoint."""
    pair = (src >= 0) & (dst >= 0)
    if not pair.any():
        return domain
    hosts = domain.size
    links = sp.csr_matrix((np.ones(int(pair.sum())), (src[pair], dst[pair])), shape=(hosts, hosts))
    component = csgraph.connected_components(links, directed=False)[1].astype(np.int64)
    meshed = np.zeros(hosts, dtype=bool)
    meshed[src[pair]] = True
    return np.where(meshed & (domain < 0), -1 - hosts - component, domain)


def _first_hops(topology: Topology, tier: np.ndarray, index: np.ndarray) -> sp.csr_matrix:
    """Endpoint x node matrix of each endpoint's first-hop (tier >= 1) switches, through its NICs or direct."""
    src, dst = topology.link_src.astype(np.int64), topology.link_dst.astype(np.int64)
    kind = topology.node_kind
    leafy = (kind == NodeKind.SWITCH) & (tier >= 1)
    shape = (topology.hosts, topology.nodes)

    def matrix(mask: np.ndarray, rows: np.ndarray, size: tuple[int, int]) -> sp.csr_matrix:
        return sp.csr_matrix((np.ones(int(mask.sum())), (rows[mask], dst[mask])), shape=size)

    to_nic = matrix((index[src] >= 0) & (kind[dst] == NodeKind.NIC), index[src], shape)
    nic_up = matrix((kind[src] == NodeKind.NIC) & leafy[dst], src, (topology.nodes,) * 2)
    direct = matrix((index[src] >= 0) & leafy[dst], index[src], shape)
    hops = (to_nic @ nic_up + direct).tocsr()
    hops.sum_duplicates()
    hops.sort_indices()
    return hops


def _padded(rows: sp.csr_matrix) -> np.ndarray:
    """The column indices of each row of ``rows``, [rows, max per row], -1 padded."""
    counts = np.diff(rows.indptr)
    out = np.full((rows.shape[0], max(1, int(counts.max(initial=0)))), -1, dtype=np.int64)
    row = np.repeat(np.arange(rows.shape[0]), counts)
    out[row, np.arange(row.size) - np.repeat(rows.indptr[:-1], counts)] = rows.indices
    return out


def pair_tiers(topology: Topology, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Tier index (into :data:`TIERS`) of the highest switch tier between endpoints ``src[i]`` and
    ``dst[i]`` (module docstring); int64, the shape of ``src``. O(pairs) after :func:`tier_map`."""
    return tier_map(topology)(src, dst)


def tier_bytes(
    topology: Topology, src: np.ndarray, dst: np.ndarray, size_bytes: np.ndarray | float
) -> dict[str, float]:
    """Bytes moved per tier (every :data:`TIERS` key) by flows ``src[i] -> dst[i]`` of ``size_bytes``
    (one value or one per flow); a flow to itself crosses no tier and is not counted."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    tiers = pair_tiers(topology, src, dst)
    size = np.broadcast_to(np.asarray(size_bytes, dtype=np.float64), tiers.shape)
    moving = (src != dst).ravel()
    totals = np.bincount(tiers.ravel()[moving], weights=size.ravel()[moving], minlength=len(TIERS))
    return {name: float(totals[i]) for i, name in enumerate(TIERS)}
