"""Event-driven execution of an op graph: streams, dependencies, overlap (layer L6).

The executor runs an :class:`~fabricsim.workload.graph.OpGraph` on the deterministic event kernel
(:class:`fabricsim.des.EventLoop`). Every (rank class, stream) pair is an in-order queue, as a CUDA
stream: its head op starts when the previous op on the stream has finished and all the op's
dependencies have finished; ops sharing a ``group`` key start together (the ranks of a collective
meet). Communication on its own streams therefore overlaps compute exactly as far as the
dependencies allow, and what is left over is *exposed* communication.

Op durations come in as an array (seconds per op): fixed compute times from the workload, and
communication payloads resolved by a :class:`CommTimer` (an analytic collective model or a flow-level
network model), cached per distinct payload. Cost: O((ops + edges) log ops), one heap event per op.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import numpy as np

from fabricsim.des import EventLoop
from fabricsim.workload.graph import CommPayload, OpGraph, Stream


class DeadlockError(ValueError):
    """The op graph cannot finish: a dependency cycle, possibly across ranks through matched
    collectives or send/recv pairs. A bug for graphs fabricsim builds; a bad input for a trace."""


class CommTimer(Protocol):
    """Times one communication payload on an otherwise idle fabric (seconds)."""

    def __call__(self, payload: CommPayload) -> float: ...


@dataclass(frozen=True, slots=True)
class Timeline:
    """Start and end (s) of every op of a graph, indexed like ``graph.ops``."""

    start_s: np.ndarray
    end_s: np.ndarray
    events: int

    @property
    def makespan_s(self) -> float:
        return float(self.end_s.max()) if self.end_s.size else 0.0


@dataclass(frozen=True, slots=True)
class CommSummary:
    """Per op category: time in flight and the part of it not hidden behind compute (s per GPU,
    averaged over the GPUs the graph stands for)."""

    busy_s: dict[str, float] = field(default_factory=dict)
    exposed_s: dict[str, float] = field(default_factory=dict)


def resolve_durations(graph: OpGraph, timer: CommTimer | None) -> np.ndarray:
    """Duration (s) of every op.

    Without a timer every op takes its ``duration_s`` (for communication ops, the nominal time the
    workload carried from the analytic collective model). With a timer, payload ops take
    ``max(duration_s, repeat * timer(payload))``: a network timer adds contention but leaves out what
    the analytic model charges beyond bandwidth (algorithm steps' latencies, NCCL protocol and channel
    efficiency; see :mod:`fabricsim.engine.fabric_loop`), so it can only lengthen the uncontended
    time, never shorten it (the rule the inference simulator applies too). Each distinct payload is
    timed once (a model with thousands of identical bucket all-reduces costs one network evaluation).
    """
    cache: dict[CommPayload, float] = {}
    out = np.empty(len(graph.ops))
    for i, op in enumerate(graph.ops):
        duration = op.duration_s
        if op.payload is not None and timer is not None:
            if op.payload not in cache:
                cache[op.payload] = float(timer(op.payload))
            duration = max(duration, op.repeat * cache[op.payload])
        out[i] = duration
    return out


class _Executor:
    """State of one run; built and used by :func:`execute` only."""

    def __init__(self, graph: OpGraph, durations_s: np.ndarray) -> None:
        ops = graph.ops
        self.loop = EventLoop()
        self.durations = durations_s.tolist()
        self.dependents = graph.dependents()
        self.remaining = [len(op.deps) for op in ops]
        keys: dict[tuple[int, Stream], int] = {}
        self.stream_of = [keys.setdefault((op.rank, op.stream), len(keys)) for op in ops]
        self.queues: list[list[int]] = [[] for _ in keys]
        for i, s in enumerate(self.stream_of):
            self.queues[s].append(i)
        self.heads = [0] * len(keys)
        self.busy = [False] * len(keys)
        self.group_of = [op.group for op in ops]
        self.group_size = {g: len(members) for g, members in graph.groups().items()}
        self.waiting: dict[str, list[int]] = {}
        self.start = [math.nan] * len(ops)
        self.end = [math.nan] * len(ops)

    def try_start(self, s: int) -> None:
        if self.busy[s] or self.heads[s] >= len(self.queues[s]):
            return
        i = self.queues[s][self.heads[s]]
        if self.remaining[i]:
            return
        self.busy[s] = True
        group = self.group_of[i]
        if group is None:
            self.launch(i)
            return
        ready = self.waiting.setdefault(group, [])
        ready.append(i)
        if len(ready) == self.group_size[group]:
            for j in ready:
                self.launch(j)

    def launch(self, i: int) -> None:
        self.start[i] = self.loop.now_s
        self.loop.schedule(self.durations[i], partial(self.finish, i))

    def finish(self, i: int) -> None:
        self.end[i] = self.loop.now_s
        s = self.stream_of[i]
        self.busy[s] = False
        self.heads[s] += 1
        self.try_start(s)
        for j in self.dependents[i]:
            self.remaining[j] -= 1
            if not self.remaining[j]:
                self.try_start(self.stream_of[j])


def execute(graph: OpGraph, durations_s: np.ndarray) -> Timeline:
    """Run ``graph`` with the given per-op durations (s); raises if the graph cannot finish."""
    if len(durations_s) != len(graph.ops):
        raise ValueError(f"{len(durations_s)} durations for {len(graph.ops)} ops")
    ex = _Executor(graph, np.asarray(durations_s, dtype=float))
    for s in range(len(ex.queues)):
        ex.try_start(s)
    ex.loop.run()
    end = np.array(ex.end)
    if np.isnan(end).any():
        stuck = [graph.ops[i].name for i in np.flatnonzero(np.isnan(end))[:3]]
        raise DeadlockError(f"op graph deadlocked (dependency cycle or stream order); first stuck ops: {stuck}")
    return Timeline(np.array(ex.start), end, ex.loop.events_run)


def _covered(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Time in [0, t] covered by disjoint sorted intervals (starts, ends), vectorised over t."""
    if starts.size == 0:
        return np.zeros_like(t)
    before = np.concatenate(([0.0], np.cumsum(ends - starts)))
    k = np.searchsorted(starts, t, side="right") - 1
    inside = np.where(k >= 0, np.minimum(t, ends[np.maximum(k, 0)]) - starts[np.maximum(k, 0)], 0.0)
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0.0)


def comm_summary(graph: OpGraph, timeline: Timeline) -> CommSummary:
    """Busy and exposed (not overlapped with the same rank's compute) time per comm category.

    Figures are per GPU, weighted by the GPUs each rank class stands for. Exposed time of an op is
    its duration minus its overlap with the union of that rank's compute ops.
    """
    ops = graph.ops
    rank = np.array([op.rank for op in ops])
    is_comm = np.array([op.is_comm for op in ops])
    weight = np.array([r.members * r.copies for r in graph.ranks], dtype=float)
    weight /= weight.sum()
    busy: dict[str, float] = {}
    exposed: dict[str, float] = {}
    for r in range(len(graph.ranks)):
        compute = np.flatnonzero((rank == r) & ~is_comm)
        order = compute[np.argsort(timeline.start_s[compute], kind="stable")]
        starts, ends = timeline.start_s[order], timeline.end_s[order]
        comm = np.flatnonzero((rank == r) & is_comm)
        a, b = timeline.start_s[comm], timeline.end_s[comm]
        hidden = _covered(starts, ends, b) - _covered(starts, ends, a)
        for i, dur, hid in zip(comm.tolist(), (b - a).tolist(), hidden.tolist(), strict=True):
            category = ops[i].category
            busy[category] = busy.get(category, 0.0) + float(weight[r]) * dur
            exposed[category] = exposed.get(category, 0.0) + float(weight[r]) * max(dur - hid, 0.0)
    return CommSummary(dict(sorted(busy.items())), dict(sorted(exposed.items())))


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """One simulated iteration: its time, the timeline, the comm summary and the symmetry used."""

    step_time_s: float
    timeline: Timeline
    comm: CommSummary
    folded: dict[str, int]
    ops: int


def simulate(
    graph: OpGraph, timer: CommTimer | None, scale: Callable[[np.ndarray], np.ndarray] | None = None
) -> SimulationResult:
    """Time the payloads with ``timer``, optionally perturb durations with ``scale``, run the graph."""
    durations = resolve_durations(graph, timer)
    if scale is not None:
        durations = scale(durations)
    timeline = execute(graph, durations)
    summary = comm_summary(graph, timeline)
    return SimulationResult(timeline.makespan_s, timeline, summary, dict(graph.folded), len(graph.ops))
