"""The analytic collective model: which algorithms can run, NCCL-style choice, time (layer L4).

:func:`estimate` is the hot path (>= 100k calls/s on one core): the costed candidates of an
(op, group, algorithm) triple are built once and cached; an estimate evaluates each candidate's
closed form and keeps the fastest, as NCCL's ``topoGetAlgoInfo`` picks the minimum of its cost
table (``src/enqueue.cc``; reference 1.7).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from fabricsim.collectives import algorithms, innetwork, mesh, torus
from fabricsim.collectives.candidate import Candidate
from fabricsim.collectives.nccl import NcclConstants, constants
from fabricsim.collectives.ops import Algorithm, CollectiveOp, Protocol
from fabricsim.collectives.placement import Group
from fabricsim.errors import FabricsimError

AR, AG, RS = CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER
REDUCING = frozenset({AR, AG, RS})
MEASURED = "measured"  # the protocol label of a time taken from a calibrated system's nccl-tests fit

Builder = Callable[[CollectiveOp, Group, NcclConstants], tuple[Candidate, ...]]
BUILDERS: dict[Algorithm, Builder] = {
    Algorithm.RING: algorithms.ring,
    Algorithm.TREE: algorithms.tree,
    Algorithm.HALVING_DOUBLING: algorithms.halving_doubling,
    Algorithm.HIERARCHICAL: algorithms.hierarchical,
    Algorithm.DIRECT: algorithms.direct,
    Algorithm.NVLS: innetwork.nvls,
    Algorithm.SHARP: innetwork.sharp,
    Algorithm.MESH: mesh.mesh,
    Algorithm.TORUS: torus.torus,
}

# What NCCL itself considers for each op (reference 1.5/1.7), plus the mesh forms RCCL runs on a
# full-mesh domain (collectives/mesh.py; unavailable behind a switch) and the per-dimension rings of a
# torus domain (collectives/torus.py); the others run only when forced.
AUTO_ALGORITHMS: dict[CollectiveOp, tuple[Algorithm, ...]] = {
    AR: (Algorithm.RING, Algorithm.TREE, Algorithm.NVLS, Algorithm.SHARP, Algorithm.MESH, Algorithm.TORUS),
    AG: (Algorithm.RING, Algorithm.NVLS, Algorithm.SHARP, Algorithm.MESH, Algorithm.TORUS),
    RS: (Algorithm.RING, Algorithm.NVLS, Algorithm.SHARP, Algorithm.MESH, Algorithm.TORUS),
    CollectiveOp.BROADCAST: (Algorithm.RING,),
    CollectiveOp.REDUCE: (Algorithm.RING,),
    CollectiveOp.ALL_TO_ALL: (Algorithm.DIRECT, Algorithm.MESH, Algorithm.TORUS),
    CollectiveOp.SEND_RECV: (Algorithm.DIRECT,),
}


@dataclass(frozen=True, slots=True)
class Estimate:
    """Time of one collective (seconds), the algorithm that achieves it and its NCCL protocol."""

    time_s: float
    algorithm: Algorithm
    protocol: str


def unavailable_reason(algorithm: Algorithm, op: CollectiveOp, group: Group) -> str | None:
    """Why ``algorithm`` cannot run ``op`` on ``group``, or None when it can."""
    if algorithm is Algorithm.RING and op in (CollectiveOp.ALL_TO_ALL, CollectiveOp.SEND_RECV):
        return f"a ring does not implement {op.value}"
    if algorithm is Algorithm.TREE and op is not AR:
        return "NCCL's tree implements all-reduce only"
    if algorithm is Algorithm.HALVING_DOUBLING and op in (CollectiveOp.ALL_TO_ALL, CollectiveOp.SEND_RECV):
        return f"halving-doubling does not implement {op.value}"
    if algorithm in (Algorithm.NVLS, Algorithm.SHARP, Algorithm.HIERARCHICAL) and op not in REDUCING:
        return f"{algorithm.value} implements all-reduce, all-gather and reduce-scatter only"
    if algorithm is Algorithm.MESH:
        return mesh.unavailable_reason(op, group)
    if algorithm is Algorithm.TORUS:
        return torus.unavailable_reason(op, group)
    if algorithm is Algorithm.DIRECT and op is CollectiveOp.ALL_TO_ALL and torus.routed_on_torus(group):
        return "inside a torus domain the exchange is routed over the torus, bisection-limited: torus runs it"
    if algorithm is Algorithm.NVLS:
        return _nvls_reason(op, group)
    if algorithm is Algorithm.SHARP:
        if group.domains == 1:
            return "the group does not cross the scale-out network"
        if not group.sharp_capable:
            return "the scale-out switch has no in-network reduction (SHARP)"
    if algorithm is Algorithm.HIERARCHICAL and group.domains == 1:
        return "the group lies inside one scale-up domain"
    return None


def _nvls_reason(op: CollectiveOp, group: Group) -> str | None:
    if not group.nvls:
        return "the scale-up switch has no NVLink SHARP (NVLS) for this GPU generation"
    if group.ranks_per_domain < 2:
        return "NVLS needs at least 2 ranks per scale-up domain"
    if group.domains > 1 and op is not AR:
        return f"NCCL runs NVLS {op.value} across domains only through CollNet"
    if op is not AR and group.ranks_per_domain > constants().nvls_max_arity:
        return f"NCCL runs NVLS {op.value} on at most {constants().nvls_max_arity} ranks per domain"
    return None


def runnable(op: CollectiveOp, group: Group) -> list[Algorithm]:
    """Algorithms that can run ``op`` on ``group`` (for error messages and tests)."""
    return [a for a in BUILDERS if unavailable_reason(a, op, group) is None]


@lru_cache(maxsize=65536)
def candidates(op: CollectiveOp, group: Group, algorithm: Algorithm) -> tuple[Candidate, ...]:
    """All costed (algorithm, protocol) options; raises FabricsimError for a forced algorithm
    that cannot run."""
    nccl = constants()
    if algorithm is not Algorithm.AUTO:
        reason = unavailable_reason(algorithm, op, group)
        if reason is not None:
            options = ", ".join(a.value for a in runnable(op, group))
            raise FabricsimError("algorithm", f"{algorithm.value} cannot run {op.value} here: {reason}",
                                 f"use auto or one of: {options}")
        return BUILDERS[algorithm](op, group, nccl)
    out: list[Candidate] = []
    for choice in AUTO_ALGORITHMS[op]:
        if choice is Algorithm.SHARP and not group.sharp_enabled:
            continue
        if unavailable_reason(choice, op, group) is None:
            out.extend(BUILDERS[choice](op, group, nccl))
    return tuple(out)


def _single_rank(size_bytes: float, group: Group, algorithm: Algorithm) -> Estimate:
    """One rank: NCCL copies sendbuff to recvbuff (read + write S in HBM) after a kernel launch."""
    nccl = constants()
    time_s = nccl.base_latency_s["ring"][Protocol.SIMPLE.value] + 2.0 * size_bytes / group.hbm_bandwidth_Bps
    return Estimate(time_s, Algorithm.DIRECT if algorithm is Algorithm.AUTO else algorithm, Protocol.SIMPLE.value)


def _measured(op: CollectiveOp, size_bytes: float, group: Group) -> Estimate | None:
    """The fastest measured line of a calibrated system for ``op`` on exactly this group (NCCL's
    tuner also takes the fastest option), or None when the system carries no fit for it."""
    for fit in group.measured:
        if fit.op == op.value:
            return Estimate(min(line.time_s(size_bytes) for line in fit.lines), Algorithm.AUTO, MEASURED)
    return None


def estimate(op: CollectiveOp, size_bytes: float, group: Group, algorithm: Algorithm = Algorithm.AUTO) -> Estimate:
    """Time of ``op`` on ``size_bytes`` (nccl-tests' S) over ``group``, in seconds.

    AUTO picks the fastest algorithm/protocol NCCL would consider (or, on a calibrated system with
    a measured fit for this op and group, the fastest measured line); a forced algorithm picks its
    fastest protocol. A group of one rank costs a launch plus a local copy (never 0 s).
    Raises FabricsimError naming 'algorithm' when the forced algorithm cannot run.
    """
    if group.ranks == 1:
        return _single_rank(size_bytes, group, algorithm)
    if algorithm is Algorithm.AUTO and group.measured:
        measured = _measured(op, size_bytes, group)
        if measured is not None:
            return measured
    best_time, best = float("inf"), None
    for candidate in candidates(op, group, algorithm):
        t = candidate.time_s(size_bytes)
        if t < best_time:
            best_time, best = t, candidate
    return Estimate(best_time, best.algorithm, best.protocol.value)
