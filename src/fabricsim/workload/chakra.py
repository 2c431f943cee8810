"""A Chakra execution trace as an op graph (layer L5): the same kind of graph the training
workload builds, so the event engine replays it unchanged.

Chakra (mlcommons/chakra, ``schema/protobuf/et_def.proto``) stores one file per rank; each node
has ``ctrl_deps`` and ``data_deps`` on nodes of the same rank. The mapping:

* each rank is a rank class of one GPU; nodes are added in a topological order of their
  dependencies (ties by node id), which is also their issue order on their stream;
* ``COMP_NODE``: compute stream; ``COMM_COLL_NODE``: a communication stream per process group
  (``pg_name`` or ``involved_dim``; the first four groups seen get the tp/dp/cp/ep streams, further
  ones share them, noted in ``graph.notes``); the k-th collective of a group on every rank is one
  collective (``group`` key), since NCCL requires the same order on all ranks;
  ``COMM_SEND_NODE``/``COMM_RECV_NODE``: pp-send / pp-recv streams, the k-th send src->dst with a
  tag meets the k-th receive of that pair and tag; other node types (metadata, memory, ...) take
  no time but keep their dependencies; a type that ``NodeType`` does not know is an error naming
  the node, as ASTRA-sim's workload layer stops on one ("Invalid node_type");
* durations: ``duration_micros`` when the trace has it (a measured trace); otherwise compute takes
  ``num_ops / flops_per_s`` and a collective ``comm_time(op, size, ranks)`` (the analytic model),
  when the caller gives them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from fabricsim.errors import FabricsimError
from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream


class NodeType(IntEnum):
    INVALID = 0
    METADATA = 1
    MEM_LOAD = 2
    MEM_STORE = 3
    COMP = 4
    COMM_SEND = 5
    COMM_RECV = 6
    COMM_COLL = 7
    STORAGE = 8
    BATCH = 9
    CHECKPOINT = 10


NODE_TYPES = frozenset(t.value for t in NodeType)

COLLECTIVES = {
    0: "all-reduce",
    1: "reduce",
    2: "all-gather",
    3: "gather",
    4: "scatter",
    5: "broadcast",
    6: "all-to-all",
    7: "reduce-scatter",
    8: "reduce-scatter",
    9: "barrier",
}
TIMED_COLLECTIVES = frozenset({"all-reduce", "reduce", "all-gather", "broadcast", "all-to-all", "reduce-scatter"})
GROUP_STREAMS = (Stream.TP_COMM, Stream.DP_COMM, Stream.CP_COMM, Stream.EP_COMM)

CommTime = Callable[[str, int, int], float]  # (op, size_bytes, ranks) -> seconds


@dataclass(frozen=True, slots=True)
class ChakraNode:
    """One node as read from the trace; ``attrs`` maps attribute names to decoded values."""

    id: int
    name: str
    type: int
    ctrl_deps: tuple[int, ...] = ()
    data_deps: tuple[int, ...] = ()
    duration_micros: int = 0
    attrs: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChakraRank:
    """One rank's file: its nodes and the GlobalMetadata attributes."""

    rank: int
    nodes: tuple[ChakraNode, ...]
    metadata: Mapping[str, object] = field(default_factory=dict)


def _order(rank: ChakraRank) -> list[ChakraNode]:
    """Kahn's topological order, smallest ready id first; raises on unknown deps or cycles."""
    by_id = {node.id: node for node in rank.nodes}
    if len(by_id) != len(rank.nodes):
        raise FabricsimError("trace", f"rank {rank.rank}: duplicate node ids", "give a valid Chakra trace")
    waiting = {node.id: 0 for node in rank.nodes}
    after: dict[int, list[int]] = {node.id: [] for node in rank.nodes}
    for node in rank.nodes:
        for dep in set(node.ctrl_deps) | set(node.data_deps):
            if dep not in by_id:
                raise FabricsimError(
                    "trace",
                    f"rank {rank.rank}: node {node.id} depends on unknown node {dep}",
                    "give every rank's complete trace",
                )
            waiting[node.id] += 1
            after[dep].append(node.id)
    ready = [i for i, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        node_id = heapq.heappop(ready)
        out.append(by_id[node_id])
        for nxt in after[node_id]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, nxt)
    if len(out) != len(rank.nodes):
        raise FabricsimError("trace", f"rank {rank.rank}: dependency cycle", "give an acyclic Chakra trace")
    return out


def _int(node: ChakraNode, name: str, rank: int) -> int:
    value = node.attrs.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise FabricsimError(
            "trace",
            f"rank {rank} node {node.id} ({node.name}): attribute {name} missing or not a count >= 0 (got {value!r})",
            "give a complete Chakra trace",
        )
    return value


@dataclass(slots=True)
class _Builder:
    """Conversion state: the graph, node ids to ops, group counters and stream assignment."""

    ranks: int
    comm_time: CommTime | None
    flops_per_s: float | None
    graph: OpGraph = field(default_factory=OpGraph)
    ids: dict[tuple[int, int], int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    streams: dict[str, Stream] = field(default_factory=dict)

    def _count(self, key: str, side: str = "") -> str:
        """``key#k`` for the k-th use of ``key`` (counted per ``side``: a send and its receive get
        the same name)."""
        k = self.counters.get(side + key, 0)
        self.counters[side + key] = k + 1
        return f"{key}#{k}"

    def _stream(self, process_group: str) -> Stream:
        if process_group not in self.streams:
            k = len(self.streams)
            if k == len(GROUP_STREAMS):
                self.graph.notes.append("more than 4 process groups: later groups share the tp/dp/cp/ep streams")
            self.streams[process_group] = GROUP_STREAMS[k % len(GROUP_STREAMS)]
        return self.streams[process_group]

    def _duration(self, node: ChakraNode, rank: int, fallback: Callable[[], float | None]) -> float:
        if node.duration_micros > 0:
            return node.duration_micros * 1e-6
        value = fallback()
        if value is None:
            raise FabricsimError(
                "trace",
                f"rank {rank} node {node.id} ({node.name}) has no duration_micros",
                "give a trace with durations, or --system to time compute and collectives",
            )
        return value

    def add(self, rank: int, node: ChakraNode) -> None:
        deps = tuple(sorted({self.ids[(rank, d)] for d in (*node.ctrl_deps, *node.data_deps)}))
        kind = node.type
        if kind not in NODE_TYPES:
            raise FabricsimError(
                "trace",
                f"rank {rank} node {node.id} ({node.name}): unknown node type {kind}",
                "see NodeType in et_def.proto",
            )
        if kind == NodeType.COMP:
            op = self._compute(rank, node, deps)
        elif kind == NodeType.COMM_COLL:
            op = self._collective(rank, node, deps)
        elif kind in (NodeType.COMM_SEND, NodeType.COMM_RECV):
            op = self._p2p(rank, node, deps)
        else:
            op = Op(node.name, rank, Stream.COMPUTE, NodeType(kind).name.lower(), 0.0, deps=deps)
        self.ids[(rank, node.id)] = self.graph.add(op)

    def _compute(self, rank: int, node: ChakraNode, deps: tuple[int, ...]) -> Op:
        def from_flops() -> float | None:
            if self.flops_per_s is None or "num_ops" not in node.attrs:
                return None
            return _int(node, "num_ops", rank) / self.flops_per_s

        return Op(node.name, rank, Stream.COMPUTE, "compute", self._duration(node, rank, from_flops), deps=deps)

    def _collective(self, rank: int, node: ChakraNode, deps: tuple[int, ...]) -> Op:
        comm_type = _int(node, "comm_type", rank)
        if comm_type not in COLLECTIVES:
            raise FabricsimError(
                "trace",
                f"rank {rank} node {node.id}: unknown comm_type {comm_type}",
                "see CollectiveCommType in et_def.proto",
            )
        name = COLLECTIVES[comm_type]
        sized = name != "barrier" or node.attrs.get("comm_size") not in (None, 0, False)
        size = _int(node, "comm_size", rank) if sized else 0
        process_group = str(node.attrs.get("pg_name") or node.attrs.get("involved_dim") or "world")
        payload = CommPayload(name, size, self.ranks) if name in TIMED_COLLECTIVES and self.ranks > 1 else None

        def model() -> float | None:
            if name == "barrier" or self.ranks == 1:
                return 0.0
            if self.comm_time is None or payload is None:
                return None
            return self.comm_time(name, size, self.ranks)

        group = self._count(f"coll:{process_group}", f"{rank}:") if self.ranks > 1 else None
        return Op(
            node.name,
            rank,
            self._stream(process_group),
            name,
            self._duration(node, rank, model),
            payload=payload,
            deps=deps,
            group=group,
        )

    def _p2p(self, rank: int, node: ChakraNode, deps: tuple[int, ...]) -> Op:
        size = _int(node, "comm_size", rank)
        tag = node.attrs.get("comm_tag", 0)
        send = node.type == NodeType.COMM_SEND
        peer = _int(node, "comm_dst" if send else "comm_src", rank)
        if peer >= self.ranks:
            raise FabricsimError(
                "trace", f"rank {rank} node {node.id}: peer rank {peer} has no trace file", "give one file per rank"
            )
        src, dst = (rank, peer) if send else (peer, rank)

        def model() -> float | None:
            return None if self.comm_time is None else self.comm_time("send-recv", size, 2)

        group = self._count(f"p2p:{src}>{dst}:{tag}", "send:" if send else "recv:")
        stream = Stream.PP_SEND if send else Stream.PP_RECV
        payload = CommPayload("send-recv", size, 2, max(1, abs(dst - src)))
        return Op(
            node.name,
            rank,
            stream,
            "send" if send else "recv",
            self._duration(node, rank, model),
            payload=payload,
            deps=deps,
            group=group,
        )


def graph_from_chakra(
    ranks: list[ChakraRank], comm_time: CommTime | None = None, flops_per_s: float | None = None
) -> OpGraph:
    """The op graph of a Chakra trace (one :class:`ChakraRank` per file, ranks 0..n-1); see the
    module docstring. O(nodes log nodes)."""
    if not ranks:
        raise FabricsimError("trace", "no trace file given", "pass one .et file per rank")
    numbers = sorted(r.rank for r in ranks)
    if numbers != list(range(len(ranks))):
        raise FabricsimError("trace", f"ranks {numbers} are not 0..{len(ranks) - 1}", "give one file per rank")
    if not any(r.nodes for r in ranks):  # a rank may idle, but a trace of metadata alone is empty
        raise FabricsimError("trace", "no nodes: the trace holds only its metadata", "give a Chakra trace with nodes")
    builder = _Builder(len(ranks), comm_time, flops_per_s)
    ordered = {r.rank: _order(r) for r in ranks}
    for r in range(len(ranks)):
        builder.graph.add_rank(RankClass(f"rank{r}"))
    for r in range(len(ranks)):
        for node in ordered[r]:
            builder.add(r, node)
    return builder.graph
