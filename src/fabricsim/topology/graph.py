"""The cluster graph as compact numpy arrays (layer L2).

Nodes carry a kind (GPU/host endpoint, switch, NIC); every physical cable is two *directed* links,
one per direction, each with its own ``capacity_Bps`` (bytes/s, per direction) and ``latency_s``.
Endpoints (the nodes flows start and end at) are listed in rank order in ``endpoints``; traffic
refers to them by endpoint index, never by node id. ``reduction`` flags switches that can reduce
in the network (SHARP on InfiniBand, NVLS on NVSwitch).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

import numpy as np

from fabricsim.errors import FabricsimError


class NodeKind(IntEnum):
    GPU = 0  # an endpoint: a GPU or a host
    SWITCH = 1
    NIC = 2


@dataclass(frozen=True, slots=True)
class Topology:
    """A directed multigraph of links; see the module docstring for the conventions."""

    name: str
    node_kind: np.ndarray  # int8 [nodes]
    link_src: np.ndarray  # int32 [links]
    link_dst: np.ndarray  # int32 [links]
    capacity_Bps: np.ndarray  # float64 [links], per direction
    latency_s: np.ndarray  # float64 [links]
    endpoints: np.ndarray  # int32 [hosts], node id of endpoint i
    reduction: np.ndarray  # bool [nodes], in-network reduction capable
    line_rate_Bps: float  # an endpoint's injection bandwidth (its first link)
    meta: dict[str, float] = field(default_factory=dict)

    @property
    def nodes(self) -> int:
        return int(self.node_kind.size)

    @property
    def links(self) -> int:
        return int(self.link_src.size)

    @property
    def hosts(self) -> int:
        return int(self.endpoints.size)


class GraphBuilder:
    """Accumulates nodes and cables, then freezes them into a :class:`Topology`."""

    def __init__(self) -> None:
        self.switch_reduction = False  # flag given to switches added without an explicit ``reduction``
        self._kinds: list[int] = []
        self._reduction: list[bool] = []
        self._src: list[np.ndarray] = []
        self._dst: list[np.ndarray] = []
        self._cap: list[np.ndarray] = []
        self._lat: list[np.ndarray] = []

    def add_nodes(self, count: int, kind: NodeKind, reduction: bool | None = None) -> np.ndarray:
        """Add ``count`` nodes of ``kind``; return their ids."""
        if reduction is None:
            reduction = self.switch_reduction and kind == NodeKind.SWITCH
        start = len(self._kinds)
        self._kinds.extend([int(kind)] * count)
        self._reduction.extend([reduction] * count)
        return np.arange(start, start + count, dtype=np.int32)

    def connect(self, a: np.ndarray, b: np.ndarray, capacity_Bps: float, latency_s: float) -> None:
        """Cable a[i] <-> b[i] (arrays broadcast): one directed link each way, same capacity."""
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int32), np.asarray(b, dtype=np.int32))
        a, b = a.ravel(), b.ravel()
        n = a.size
        self._src += [a, b]
        self._dst += [b, a]
        self._cap += [np.full(2 * n, float(capacity_Bps))]
        self._lat += [np.full(2 * n, float(latency_s))]

    def build(
        self, name: str, endpoints: np.ndarray, line_rate_Bps: float, meta: dict[str, float] | None = None
    ) -> Topology:
        empty = np.zeros(0)
        return Topology(
            name=name,
            node_kind=np.asarray(self._kinds, dtype=np.int8),
            link_src=np.concatenate(self._src or [empty]).astype(np.int32),
            link_dst=np.concatenate(self._dst or [empty]).astype(np.int32),
            capacity_Bps=np.concatenate(self._cap or [empty]).astype(np.float64),
            latency_s=np.concatenate(self._lat or [empty]).astype(np.float64),
            endpoints=np.asarray(endpoints, dtype=np.int32),
            reduction=np.asarray(self._reduction, dtype=bool),
            line_rate_Bps=float(line_rate_Bps),
            meta=dict(meta or {}),
        )


def remove_links(topology: Topology, failed: np.ndarray | list[int]) -> Topology:
    """Copy of ``topology`` without the directed links ``failed`` (link ids).

    A failed cable is usually both directions: pass both ids (see :func:`cable_of`).
    Routing then finds the remaining equal-cost shortest paths; unreachable pairs raise at routing.
    """
    failed = np.asarray(failed, dtype=np.int64)
    if failed.size and (failed.min() < 0 or failed.max() >= topology.links):
        raise FabricsimError("failed_links", f"link ids must be in [0, {topology.links})")
    keep = np.ones(topology.links, dtype=bool)
    keep[failed] = False
    return replace(
        topology,
        link_src=topology.link_src[keep],
        link_dst=topology.link_dst[keep],
        capacity_Bps=topology.capacity_Bps[keep],
        latency_s=topology.latency_s[keep],
        name=f"{topology.name}-{int(failed.size)}failed",
        meta={**topology.meta, "failed_links": topology.meta.get("failed_links", 0) + int(failed.size)},
    )


def cable_of(topology: Topology, link: int) -> np.ndarray:
    """Both directed link ids of the cable that carries ``link`` (the first parallel pair found)."""
    a, b = topology.link_src[link], topology.link_dst[link]
    back = np.flatnonzero((topology.link_src == b) & (topology.link_dst == a))
    return np.array([link, int(back[0])], dtype=np.int64)


def cables(topology: Topology) -> np.ndarray:
    """Every cable as its two directed link ids, [cables, 2] (forward = from the lower node id).

    Parallel cables between one pair are paired k-th forward with k-th backward link (by id).
    """
    src, dst = topology.link_src.astype(np.int64), topology.link_dst.astype(np.int64)
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    ids = np.arange(topology.links)
    fwd = src < dst
    forward = ids[fwd][np.lexsort((ids[fwd], hi[fwd], lo[fwd]))]
    backward = ids[~fwd][np.lexsort((ids[~fwd], hi[~fwd], lo[~fwd]))]
    if forward.size != backward.size or np.any(lo[forward] != lo[backward]) or np.any(hi[forward] != hi[backward]):
        raise FabricsimError("topology", "some links have no reverse link", "build cables with GraphBuilder.connect")
    return np.stack([forward, backward], axis=1)


def fabric_cables(topology: Topology) -> np.ndarray:
    """The cables between two non-endpoint nodes (switches, NICs), [cables, 2] link ids: the ones
    whose failure the fabric can route around (an endpoint's own access cable has no spare)."""
    pairs = cables(topology)
    transit = topology.node_kind != NodeKind.GPU
    keep = transit[topology.link_src[pairs[:, 0]]] & transit[topology.link_dst[pairs[:, 0]]]
    return pairs[keep]


def fail_cables(topology: Topology, count: int, seed: int) -> tuple[Topology, np.ndarray]:
    """``topology`` without ``count`` fabric cables (both directions) drawn without replacement by
    ``numpy.random.default_rng(seed)``; also returns the failed cables' link ids, [count, 2]."""
    candidates = fabric_cables(topology)
    if count < 0 or count > candidates.shape[0]:
        raise FabricsimError(
            "fail-links", f"--fail-links {count} is not in [0, {candidates.shape[0]}] (the fabric cables)"
        )
    pick = np.sort(np.random.default_rng(seed).choice(candidates.shape[0], size=count, replace=False))
    failed = candidates[pick]
    return remove_links(topology, failed.ravel()), failed
