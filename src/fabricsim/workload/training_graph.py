"""A training iteration as an op graph, one rank class per pipeline stage (layer L5).

Input is a :class:`TrainingPlan`: per model chunk (virtual pipeline stage) the compute time of one
micro-batch's forward and backward (recompute included) and the blocking communication inside it
(TP/SP all-reduce or all-gather/reduce-scatter, EP all-to-all, CP exchange: aggregated per chunk,
``layers`` sync points each), the stage-to-stage activation transfer, the data-parallel gradient
buckets of each pipeline rank and the optimizer step. The plan is filled from the analytic
training model's own functions (``engine/`` does that), so both paths share one set of costs.

The graph follows Megatron-LM's schedules (``megatron/core/pipeline_parallel/schedules.py``):
1F1B (warm-up of ``p - s - 1`` forwards, steady one-forward-one-backward, cool-down) and the
interleaved 1F1B with ``v`` model chunks per rank (warm-up ``2(p - s - 1) + (v - 1)p``, chunk of
the k-th forward ``(k mod pv) // p``, micro-batch ``(k // pv)·p + k mod p``). A forward needs the
previous virtual stage's forward of the same micro-batch (plus the p2p transfer), a backward the
next virtual stage's backward. Gradient buckets of a chunk leave as its last backward produces
them (the last backward is split into one slice per bucket) when ``overlap_grad_reduce``, else
after the rank's last backward; the optimizer waits for all of them. ZeRO's all-gather of the
updated parameters is issued at the start of the iteration: with ``overlap_param_gather``
(Megatron's distributed optimizer overlapping it with the first forward) the op after the first
forward waits for it, without it the first forward does.

Symmetry: the ``tensor_parallel`` GPUs of a stage are one rank class (in lock-step, ``members``);
data-parallel replicas are folded into ``copies`` unless ``replicas`` > 1 asks to unfold some of
them (for stragglers), in which case their gradient buckets meet as one collective group.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream


class Schedule(StrEnum):
    ONE_F_ONE_B = "1f1b"
    INTERLEAVED = "interleaved"


@dataclass(frozen=True, slots=True)
class Transfer:
    """One communication op: nominal time (s) from the analytic model, the payload a network model
    can re-time, and how many back-to-back copies of the payload it stands for."""

    time_s: float
    category: str
    payload: CommPayload | None = None
    repeat: int = 1
    stream: Stream = Stream.TP_COMM


@dataclass(frozen=True, slots=True)
class ChunkCosts:
    """One micro-batch on one model chunk (virtual stage): compute and blocking communication (s)."""

    forward_s: float
    backward_s: float
    forward_comm: tuple[Transfer, ...] = ()
    backward_comm: tuple[Transfer, ...] = ()
    layers: int = 1


@dataclass(frozen=True, slots=True)
class TrainingPlan:
    """Everything the op graph needs; ``chunks`` is indexed by virtual stage ``c·p + s``."""

    pipeline_parallel: int
    virtual_stages: int
    micro_batches: int
    chunks: tuple[ChunkCosts, ...]
    p2p: Transfer | None = None
    grad_buckets: tuple[tuple[Transfer, ...], ...] = ()  # per virtual stage, the chunk's buckets
    param_gather: tuple[Transfer, ...] = ()  # per pipeline rank: ZeRO >= 1 all-gather of updated weights
    optimizer_s: tuple[float, ...] = ()  # per pipeline rank
    tensor_parallel: int = 1
    data_parallel: int = 1
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True  # False: the first forward waits for ZeRO's parameter all-gather
    blocking_p2p: bool = True
    notes: tuple[str, ...] = field(default=())

    @property
    def schedule(self) -> Schedule:
        return Schedule.INTERLEAVED if self.virtual_stages > 1 else Schedule.ONE_F_ONE_B


def one_f_one_b(stages: int, stage: int, micro_batches: int) -> list[tuple[bool, int, int]]:
    """Megatron 1F1B order on ``stage``: (is_forward, micro_batch, chunk) per compute op."""
    warmup = min(stages - stage - 1, micro_batches)
    order = [(True, k, 0) for k in range(warmup)]
    for k in range(micro_batches - warmup):
        order += [(True, warmup + k, 0), (False, k, 0)]
    order += [(False, k, 0) for k in range(micro_batches - warmup, micro_batches)]
    return order


def interleaved(stages: int, stage: int, micro_batches: int, chunks: int) -> list[tuple[bool, int, int]]:
    """Megatron interleaved 1F1B order on ``stage`` with ``chunks`` model chunks per rank."""
    total = micro_batches * chunks
    group = stages * chunks

    def item(k: int, forward: bool) -> tuple[bool, int, int]:
        chunk = (k % group) // stages
        return (forward, (k // group) * stages + k % stages, chunk if forward else chunks - 1 - chunk)

    warmup = total if micro_batches == stages else min((stages - stage - 1) * 2 + (chunks - 1) * stages, total)
    order = [item(k, True) for k in range(warmup)]
    for k in range(total - warmup):
        order += [item(warmup + k, True), item(k, False)]
    order += [item(k, False) for k in range(total - warmup, total)]
    return order


def _order(plan: TrainingPlan, stage: int) -> list[tuple[bool, int, int]]:
    p, v, m = plan.pipeline_parallel, plan.virtual_stages, plan.micro_batches
    return interleaved(p, stage, m, v) if v > 1 else one_f_one_b(p, stage, m)


@dataclass(frozen=True, slots=True)
class _Work:
    name: str
    kind: str
    duration_s: float
    layers: int


class _Builder:
    """Emits the ops of one DP replica; ``fwd``/``bwd`` map (micro_batch, virtual_stage) to the op
    whose end makes the result available downstream (after p2p when there is one)."""

    def __init__(self, graph: OpGraph, plan: TrainingPlan, ranks: list[int]) -> None:
        self.graph, self.plan, self.ranks = graph, plan, ranks
        self.fwd: dict[tuple[int, int], int] = {}
        self.bwd: dict[tuple[int, int], int] = {}
        self.last_compute: dict[int, int] = {}

    def _comm(self, stage: int, t: Transfer, dep: int, name: str) -> int:
        op = Op(name, self.ranks[stage], t.stream, t.category, t.time_s, t.payload, (dep,), repeat=t.repeat)
        return self.graph.add(op)

    def _p2p(self, stage: int, done: int, name: str) -> int:
        t = self.plan.p2p
        if t is None or self.plan.pipeline_parallel == 1:
            return done
        send = self._comm(stage, t, done, f"send {name}")
        if self.plan.blocking_p2p:
            self.last_compute[stage] = send  # Megatron's 1F1B waits for its send/recv pair
        return send

    def _compute(self, stage: int, work: _Work, deps: list[int]) -> int:
        if stage in self.last_compute:
            deps = [*deps, self.last_compute[stage]]
        op = Op(
            work.name,
            self.ranks[stage],
            Stream.COMPUTE,
            work.kind,
            work.duration_s,
            deps=tuple(sorted(set(deps))),
            sync_points=work.layers,
        )
        self.last_compute[stage] = self.graph.add(op)
        return self.last_compute[stage]

    def _blocking(self, stage: int, transfers: tuple[Transfer, ...], name: str) -> int:
        """Communication on the critical path of the compute stream (issued and waited for)."""
        for t in transfers:
            self.last_compute[stage] = self._comm(stage, t, self.last_compute[stage], f"{t.category} {name}")
        return self.last_compute[stage]

    def forward(self, stage: int, mb: int, chunk: int, wait_for: int | None) -> None:
        """Emit one forward; ``wait_for`` is an op the work after this forward's compute waits for."""
        p = self.plan.pipeline_parallel
        vs = chunk * p + stage
        costs = self.plan.chunks[vs]
        deps = [self.fwd[(mb, vs - 1)]] if vs > 0 else []
        if wait_for is not None and not self.plan.overlap_param_gather:
            deps.append(wait_for)  # not overlapped: the gathered weights are needed before the forward
            wait_for = None
        name = f"F{mb}.c{chunk}"
        self._compute(stage, _Work(name, "forward", costs.forward_s, costs.layers), deps)
        if wait_for is not None:
            self._compute(stage, _Work("wait param-gather", "wait", 0.0, 1), [wait_for])
        done = self._blocking(stage, costs.forward_comm, name)
        last = vs == len(self.plan.chunks) - 1
        self.fwd[(mb, vs)] = done if last else self._p2p(stage, done, name)

    def backward(self, stage: int, mb: int, chunk: int, slices: int) -> list[int]:
        """Emit one backward; returns the op id of each of its ``slices`` compute slices."""
        p = self.plan.pipeline_parallel
        vs = chunk * p + stage
        costs = self.plan.chunks[vs]
        deps = [self.fwd[(mb, vs)]]
        if vs + 1 < len(self.plan.chunks):
            deps.append(self.bwd[(mb, vs + 1)])
        name = f"B{mb}.c{chunk}"
        work = _Work(name, "backward", costs.backward_s / slices, max(1, costs.layers // slices))
        pieces = [self._compute(stage, work, deps if k == 0 else []) for k in range(slices)]
        done = self._blocking(stage, costs.backward_comm, name)
        self.bwd[(mb, vs)] = done if vs == 0 else self._p2p(stage, done, name)
        return pieces

    def _bucket_op(self, stage: int, t: Transfer, dep: int | None, name: str) -> int:
        group = f"{name}@pp{stage}" if self.graph.ranks[self.ranks[stage]].copies == 1 else None
        deps = () if dep is None else (dep,)
        op = Op(name, self.ranks[stage], Stream.DP_COMM, t.category, t.time_s, t.payload, deps, group, 1, t.repeat)
        return self.graph.add(op)

    def _ready(self, stage: int, item: tuple[bool, int, int]) -> bool:
        is_fwd, mb, chunk = item
        vs = chunk * self.plan.pipeline_parallel + stage
        if is_fwd:
            return vs == 0 or (mb, vs - 1) in self.fwd
        return vs + 1 == len(self.plan.chunks) or (mb, vs + 1) in self.bwd

    def _own_buckets(self, stage: int, chunk: int) -> tuple[Transfer, ...]:
        plan = self.plan
        return plan.grad_buckets[chunk * plan.pipeline_parallel + stage] if plan.grad_buckets else ()

    def emit_ready(self, stage: int, state: _StageState) -> int:
        """Emit the ops of ``stage`` whose cross-stage inputs exist; returns how many were emitted."""
        emitted = 0
        if state.cursor == 0 and self.plan.param_gather and state.gather is None:
            state.gather = self._bucket_op(stage, self.plan.param_gather[stage], None, "param-gather")
        while state.cursor < len(state.order) and self._ready(stage, state.order[state.cursor]):
            is_fwd, mb, chunk = state.order[state.cursor]
            if is_fwd:
                self.forward(stage, mb, chunk, state.gather if state.cursor == 0 else None)
            else:
                own = self._own_buckets(stage, chunk)
                overlap = bool(self.plan.overlap_grad_reduce and state.last_backward[chunk] == state.cursor and own)
                pieces = self.backward(stage, mb, chunk, len(own) if overlap else 1)
                if overlap:
                    state.buckets += [
                        self._bucket_op(stage, t, pieces[k], f"grad-bucket{k}.c{chunk}") for k, t in enumerate(own)
                    ]
            state.cursor += 1
            emitted += 1
        return emitted

    def finish(self, stage: int, state: _StageState) -> None:
        """Gradient buckets not overlapped with backward, then the optimizer."""
        plan = self.plan
        if not plan.overlap_grad_reduce:
            last = self.last_compute[stage]
            for chunk in range(plan.virtual_stages):
                own = self._own_buckets(stage, chunk)
                state.buckets += [
                    self._bucket_op(stage, t, last, f"grad-bucket{k}.c{chunk}") for k, t in enumerate(own)
                ]
        optimizer_s = plan.optimizer_s[stage] if plan.optimizer_s else 0.0
        if optimizer_s or state.buckets:
            self._compute(stage, _Work("optimizer", "optimizer", optimizer_s, 1), state.buckets)


@dataclass(slots=True)
class _StageState:
    order: list[tuple[bool, int, int]]
    cursor: int = 0
    gather: int | None = None
    buckets: list[int] = field(default_factory=list)
    last_backward: dict[int, int] = field(default_factory=dict)


def _emit_replica(builder: _Builder, stages: int) -> None:
    """Emit every stage's schedule in an order where dependencies come first: sweep over the
    stages, each emitting what its neighbours have made ready (Megatron's schedules never wait on
    each other in a cycle, so every sweep makes progress)."""
    states = [_StageState(_order(builder.plan, s)) for s in range(stages)]
    for state in states:
        state.last_backward = {chunk: i for i, (fwd, _, chunk) in enumerate(state.order) if not fwd}
    while any(state.cursor < len(state.order) for state in states):
        if not sum(builder.emit_ready(s, state) for s, state in enumerate(states)):
            raise ValueError("pipeline schedule cannot make progress (inconsistent plan)")
    for s, state in enumerate(states):
        builder.finish(s, state)


def build_training_graph(plan: TrainingPlan, replicas: int = 1) -> OpGraph:
    """The op graph of one iteration; ``replicas`` data-parallel replicas are simulated explicitly
    (1: all folded into one), the remaining ``data_parallel - replicas`` are folded.

    Size: about ``replicas · p · m · v · (2 + comm ops)`` ops.
    """
    p = plan.pipeline_parallel
    if len(plan.chunks) != p * plan.virtual_stages:
        raise ValueError(f"{len(plan.chunks)} chunk costs for pp*vpp = {p * plan.virtual_stages}")
    replicas = max(1, min(replicas, plan.data_parallel))
    copies = plan.data_parallel if replicas == 1 else 1
    graph = OpGraph()
    graph.folded = {
        "tensor_parallel_ranks_in_lock_step": plan.tensor_parallel,
        "data_parallel_replicas_folded": plan.data_parallel - replicas,
        "data_parallel_replicas_simulated": replicas,
        "pipeline_stages_simulated": p,
    }
    graph.notes = [*plan.notes, f"schedule {plan.schedule.value}, {plan.micro_batches} micro-batches"]
    for r in range(replicas):
        ranks = [graph.add_rank(RankClass(f"dp{r}.pp{s}", plan.tensor_parallel, copies)) for s in range(p)]
        _emit_replica(_Builder(graph, plan, ranks), p)
    return graph
