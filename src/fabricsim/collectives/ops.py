"""Collective operations and algorithms: names, parsing and nccl-tests bus factors (layer L4).

``size_bytes`` (S) always follows nccl-tests: the per-rank buffer for all-reduce, broadcast, reduce
and send-recv; the full ``n * count`` buffer for all-gather, reduce-scatter and all-to-all
(nccl-tests ``doc/PERFORMANCE.md`` and the ``*GetBw()`` functions; reference 1.11).
"""

from __future__ import annotations

from enum import StrEnum

from fabricsim.errors import parse_choice


class CollectiveOp(StrEnum):
    """The seven operations of the CLI contract (DESIGN.md)."""

    ALL_REDUCE = "all-reduce"
    ALL_GATHER = "all-gather"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_TO_ALL = "all-to-all"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    SEND_RECV = "send-recv"


SWITCHLESS_OPS = frozenset(
    {CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_TO_ALL}
)
"""The ops the switchless scale-up algorithms (full mesh, torus) implement."""


class Algorithm(StrEnum):
    """Collective algorithms. ``AUTO`` lets the model choose as NCCL would."""

    AUTO = "auto"
    RING = "ring"
    TREE = "tree"
    HALVING_DOUBLING = "halving-doubling"
    NVLS = "nvls"
    SHARP = "sharp"
    HIERARCHICAL = "hierarchical"
    DIRECT = "direct"
    MESH = "mesh"  # direct exchanges over a full-mesh scale-up domain (collectives/mesh.py)
    TORUS = "torus"  # rings along a torus domain's dimensions (collectives/torus.py)


class Protocol(StrEnum):
    """NCCL wire protocols: LL (8 B data + 8 B flag), LL128 (120 of 128 B), Simple (bulk + fences)."""

    LL = "LL"
    LL128 = "LL128"
    SIMPLE = "Simple"


_OP_ALIASES = {
    "allreduce": CollectiveOp.ALL_REDUCE,
    "all_reduce": CollectiveOp.ALL_REDUCE,
    "allgather": CollectiveOp.ALL_GATHER,
    "all_gather": CollectiveOp.ALL_GATHER,
    "reducescatter": CollectiveOp.REDUCE_SCATTER,
    "reduce_scatter": CollectiveOp.REDUCE_SCATTER,
    "alltoall": CollectiveOp.ALL_TO_ALL,
    "all_to_all": CollectiveOp.ALL_TO_ALL,
    "sendrecv": CollectiveOp.SEND_RECV,
    "send_recv": CollectiveOp.SEND_RECV,
}


def parse_op(text: str | CollectiveOp) -> CollectiveOp:
    """``"all-reduce"`` (or nccl-tests spellings such as ``allreduce``) to a :class:`CollectiveOp`.

    Raises FabricsimError(field "op") listing the close names for anything else.
    """
    alias = _OP_ALIASES.get(str(text).strip().lower())
    return alias if alias is not None else parse_choice("op", text, CollectiveOp)


def parse_algorithm(text: str | Algorithm) -> Algorithm:
    """``"ring"`` etc. to an :class:`Algorithm`; FabricsimError(field "algorithm") otherwise."""
    return parse_choice("algorithm", text, Algorithm)


def bus_factor(op: CollectiveOp, ranks: int) -> float:
    """nccl-tests ``busbw / algbw`` for ``op`` on ``ranks`` ranks (reference 1.11).

    all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; broadcast, reduce,
    send-recv 1. A single rank moves nothing over any bus, so its factor is 0 for every op
    (nccl-tests would report a local copy as broadcast/send-recv busbw).
    """
    n = ranks
    if n <= 1:
        return 0.0
    if op is CollectiveOp.ALL_REDUCE:
        return 2.0 * (n - 1) / n
    if op in (CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_TO_ALL):
        return (n - 1) / n
    return 1.0
