"""Collective schedules as flows, step by step, for a network model (layer L4).

Each algorithm emits a list of steps; a step is a set of (src_rank, dst_rank, bytes) flows that run
together, and step i + 1 starts when step i's last flow has arrived (a barrier, as NCCL's chunk
dependencies impose between dependent steps; pipelining inside a step is not modelled). Running the
steps on a :class:`~fabricsim.network.base.NetworkModel` with ranks placed on endpoints makes the
collective's time reflect the real topology, routing and contention.

Sizes follow nccl-tests (see :mod:`fabricsim.collectives.ops`): S per rank for all-reduce,
broadcast, reduce, send-recv; the full buffer for all-gather, reduce-scatter and all-to-all.
Algorithms: ring (Patarasuk & Yuan 2009), binary tree (reduce up, broadcast down), halving-doubling
(Rabenseifner 2004, power-of-two ranks), direct all-to-all (one step, all pairs) and pairwise
all-to-all (``ring``: n - 1 shift steps), hierarchical (intra-node reduce-scatter, inter-node ring
all-reduce per local rank, intra-node all-gather).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.collectives.ops import Algorithm, CollectiveOp
from fabricsim.errors import FabricsimError
from fabricsim.network.base import NetworkModel, make_flows


@dataclass(frozen=True, slots=True)
class Step:
    """Flows ``src[i] -> dst[i]`` (ranks) of ``size_bytes[i]`` that run together."""

    src: np.ndarray
    dst: np.ndarray
    size_bytes: np.ndarray

    def same_as(self, other: Step) -> bool:
        return all(np.array_equal(getattr(self, n), getattr(other, n)) for n in ("src", "dst", "size_bytes"))


@dataclass(frozen=True, slots=True)
class ScheduleRequest:
    """What to schedule: ``ranks`` of which ``ranks_per_node`` share a node (hierarchical)."""

    op: CollectiveOp
    algorithm: Algorithm
    ranks: int
    size_bytes: float
    ranks_per_node: int = 1


@dataclass(frozen=True, slots=True)
class ScheduleTime:
    """Result of :func:`run_schedule`: total and per-step times (s), steps simulated vs folded."""

    time_s: float
    step_time_s: tuple[float, ...]
    simulated_steps: int
    folded_steps: int


def _step(src: np.ndarray, dst: np.ndarray, size_bytes: float) -> Step:
    return Step(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), np.full(len(src), float(size_bytes)))


def _ring(n: int, chunk: float, count: int) -> list[Step]:
    ranks = np.arange(n)
    return [_step(ranks, (ranks + 1) % n, chunk) for _ in range(count)]


def _tree(n: int, size: float, up: bool, down: bool) -> list[Step]:
    ranks = np.arange(1, n)
    depth = np.floor(np.log2(ranks + 1)).astype(int)
    parent = (ranks - 1) // 2
    levels = range(int(depth.max(initial=0)), 0, -1)
    reduce_steps = [_step(ranks[depth == d], parent[depth == d], size) for d in levels]
    bcast_steps = [_step(parent[depth == d], ranks[depth == d], size) for d in reversed(levels)]
    return (reduce_steps if up else []) + (bcast_steps if down else [])


def _halving_doubling(n: int, size: float) -> list[Step]:
    if n & (n - 1):
        raise FabricsimError("algorithm", f"halving-doubling needs a power-of-two rank count, got {n}", "use ring")
    ranks = np.arange(n)
    rounds = int(np.log2(n)) if n > 1 else 0
    halving = [_step(ranks, ranks ^ (n >> (k + 1)), size / 2 ** (k + 1)) for k in range(rounds)]
    return halving + halving[::-1]


def _hierarchical(n: int, size: float, per_node: int) -> list[Step]:
    if per_node < 1 or n % per_node:
        raise FabricsimError("ranks_per_node", f"{n} ranks are not whole nodes of {per_node}")
    nodes = n // per_node
    ranks = np.arange(n)
    local, node = ranks % per_node, ranks // per_node
    intra = _step(ranks, node * per_node + (local + 1) % per_node, size / per_node)
    inter = _step(ranks, ((node + 1) % nodes) * per_node + local, size / n)
    intra_steps = [intra] * (per_node - 1) if per_node > 1 else []
    inter_steps = [inter] * (2 * (nodes - 1)) if nodes > 1 else []
    return intra_steps + inter_steps + intra_steps


def _all_to_all(n: int, size: float, direct: bool) -> list[Step]:
    chunk = size / n
    if direct:
        src, dst = np.divmod(np.arange(n * n), n)
        keep = src != dst
        return [_step(src[keep], dst[keep], chunk)]
    ranks = np.arange(n)
    return [_step(ranks, (ranks + k) % n, chunk) for k in range(1, n)]


def build_schedule(request: ScheduleRequest) -> list[Step]:
    """The steps of ``request.op`` by ``request.algorithm``; unsupported pairs raise FabricsimError."""
    n, size, op, algo = request.ranks, float(request.size_bytes), request.op, request.algorithm
    if n < 1:
        raise FabricsimError("ranks", f"must be >= 1, got {n}")
    if n == 1:
        return []
    table = {
        (CollectiveOp.ALL_REDUCE, Algorithm.RING): lambda: _ring(n, size / n, 2 * (n - 1)),
        (CollectiveOp.ALL_GATHER, Algorithm.RING): lambda: _ring(n, size / n, n - 1),
        (CollectiveOp.REDUCE_SCATTER, Algorithm.RING): lambda: _ring(n, size / n, n - 1),
        (CollectiveOp.ALL_REDUCE, Algorithm.TREE): lambda: _tree(n, size, True, True),
        (CollectiveOp.REDUCE, Algorithm.TREE): lambda: _tree(n, size, True, False),
        (CollectiveOp.BROADCAST, Algorithm.TREE): lambda: _tree(n, size, False, True),
        (CollectiveOp.ALL_REDUCE, Algorithm.HALVING_DOUBLING): lambda: _halving_doubling(n, size),
        (CollectiveOp.ALL_REDUCE, Algorithm.HIERARCHICAL): lambda: _hierarchical(n, size, request.ranks_per_node),
        (CollectiveOp.ALL_TO_ALL, Algorithm.DIRECT): lambda: _all_to_all(n, size, True),
        (CollectiveOp.ALL_TO_ALL, Algorithm.RING): lambda: _all_to_all(n, size, False),
        (CollectiveOp.SEND_RECV, Algorithm.DIRECT): lambda: [_step([0], [1], size)],
    }
    if (op, algo) not in table:
        known = ", ".join(f"{o.value}/{a.value}" for o, a in table)
        raise FabricsimError("algorithm", f"no flow schedule for {op.value} with {algo.value}", f"known: {known}")
    return table[(op, algo)]()


def run_schedule(steps: list[Step], network: NetworkModel, placement: np.ndarray) -> ScheduleTime:
    """Run ``steps`` one after another on ``network``, rank r on endpoint ``placement[r]``.

    Folding: a step equal to the previous one (same src, dst and bytes arrays) is not simulated
    again; its time is the previous step's. This is exact: every step starts on an idle network
    (barrier), and the network models are deterministic functions of the flow set (ECMP hashes
    src, dst and label, not the step), so identical flow sets give identical times.
    """
    placement = np.asarray(placement, dtype=np.int64)
    times: list[float] = []
    simulated = 0
    for i, step in enumerate(steps):
        if i and step.same_as(steps[i - 1]):
            times.append(times[-1])
            continue
        flows = make_flows(placement[step.src], placement[step.dst], step.size_bytes)
        times.append(network.run(flows).completion_time_s)
        simulated += 1
    return ScheduleTime(float(sum(times)), tuple(times), simulated, len(steps) - simulated)
