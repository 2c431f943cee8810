"""Op graphs: the work of one iteration as ops on per-rank streams with dependencies (layer L5).

An :class:`OpGraph` holds ops for a few *rank classes*. A rank class stands for one or more GPUs
that do identical work in lock-step (e.g. the 8 tensor-parallel ranks of one pipeline stage, or
all data-parallel replicas when they are folded); ``members`` says how many GPUs are synchronised
inside each op (max-of-``members`` for stragglers) and ``copies`` how many identical classes were
folded into this one (no synchronisation between the copies).

Each op runs on one stream of its rank class. Streams are in-order queues, as CUDA streams: an op
starts when it reaches the head of its stream, the previous op on that stream has finished and all
its dependencies have finished. Ops with the same ``group`` key (one per participating rank class)
start together, as the ranks of one collective do. An op has either a fixed ``duration_s`` or a
:class:`CommPayload` that the engine times with a network model.

The graph is a plain container: building it is O(ops), it has no knowledge of time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Stream(StrEnum):
    """Execution streams of one GPU (CUDA streams in Megatron-LM / NCCL terms)."""

    COMPUTE = "compute"
    TP_COMM = "tp-comm"
    CP_COMM = "cp-comm"
    EP_COMM = "ep-comm"
    PP_SEND = "pp-send"
    PP_RECV = "pp-recv"
    DP_COMM = "dp-comm"


COMM_STREAMS = frozenset(s for s in Stream if s is not Stream.COMPUTE)


@dataclass(frozen=True, slots=True)
class CommPayload:
    """A collective or point-to-point transfer a network model times.

    ``collective`` is an nccl-tests op name (all-reduce, all-gather, reduce-scatter, all-to-all,
    send-recv); ``size_bytes`` is S as nccl-tests defines it; ``group_gpus`` the ranks taking part and
    ``group_stride`` the distance in GPU numbering between consecutive ranks (1 inside a node for TP,
    tp*cp for DP, ...), which says which fabric tier the group crosses. ``link_class`` names that tier
    for timelines (``scale-up`` or ``scale-out``).
    """

    collective: str
    size_bytes: int
    group_gpus: int
    group_stride: int = 1
    link_class: str = "scale-up"


@dataclass(frozen=True, slots=True)
class Op:
    """One op. ``category`` groups ops in summaries (e.g. ``tp-all-reduce``, ``forward``).

    A communication op carries its nominal ``duration_s`` and, optionally, the ``payload`` a network
    model can re-time; ``repeat`` back-to-back copies of the payload make up the op (e.g. the
    2 all-reduces of each of a stage's layers, aggregated). ``sync_points`` is how many times the
    op's ``members`` meet inside it (the layers of an aggregated op).
    """

    name: str
    rank: int
    stream: Stream
    category: str
    duration_s: float = 0.0
    payload: CommPayload | None = None
    deps: tuple[int, ...] = ()
    group: str | None = None
    sync_points: int = 1
    repeat: int = 1

    @property
    def is_comm(self) -> bool:
        return self.stream is not Stream.COMPUTE


@dataclass(frozen=True, slots=True)
class RankClass:
    """GPUs doing identical work: ``members`` in lock-step inside each op, ``copies`` folded away."""

    name: str
    members: int = 1
    copies: int = 1


@dataclass(slots=True)
class OpGraph:
    """Ops of one iteration, in issue order per stream; ``folded`` says what symmetry was used."""

    ranks: list[RankClass] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    folded: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add_rank(self, rank: RankClass) -> int:
        """Add a rank class; returns its index."""
        self.ranks.append(rank)
        return len(self.ranks) - 1

    def add(self, op: Op) -> int:
        """Append ``op`` (its deps must already be in the graph); returns its id."""
        if not 0 <= op.rank < len(self.ranks):
            raise ValueError(f"op {op.name!r}: unknown rank class {op.rank}")
        n = len(self.ops)
        for dep in op.deps:
            if not 0 <= dep < n:
                raise ValueError(f"op {op.name!r}: dependency {dep} is not an earlier op")
        if op.duration_s < 0:
            raise ValueError(f"op {op.name!r}: negative duration {op.duration_s}")
        self.ops.append(op)
        return n

    @property
    def gpus_represented(self) -> int:
        """GPUs this graph stands for once folded classes are unfolded."""
        return sum(r.members * r.copies for r in self.ranks)

    def dependents(self) -> list[list[int]]:
        """For each op, the ops that depend on it (O(ops + edges))."""
        out: list[list[int]] = [[] for _ in self.ops]
        for i, op in enumerate(self.ops):
            for dep in op.deps:
                out[dep].append(i)
        return out

    def groups(self) -> dict[str, list[int]]:
        """Ops that must start together, per group key."""
        out: dict[str, list[int]] = {}
        for i, op in enumerate(self.ops):
            if op.group is not None:
                out.setdefault(op.group, []).append(i)
        return out
