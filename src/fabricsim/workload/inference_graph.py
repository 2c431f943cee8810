"""Prefill chunks and decode steps of one inference replica as an op graph (layer L5).

The batch is split into ``pipeline_parallel`` micro-batches (the analytic step model's split).
**Prefill**: the prompts run in ``prefill_chunks`` chunks; chunk ``c`` of micro-batch ``j`` crosses
the stages in order, and each stage takes the next (chunk, micro-batch) as soon as it is free, so
the pipeline fills once. A micro-batch's first tokens exist when its last chunk leaves the last
stage (TTFT of the batch: the last such time). **Decode**: micro-batch ``j``'s step ``k`` on stage
``s`` runs after its step ``k`` on stage ``s - 1`` and, on stage 0, after its step ``k - 1`` (or its
prefill) left the last stage (the next token needs the previous one); the ``pp`` micro-batches
chase each other, keeping the pipeline full as the analytic step model assumes.

Each (chunk or step, micro-batch, stage) pass is ``layer_groups`` groups of the stage's layers,
each a compute op followed by its blocking collectives (TP all-reduces on the tp-comm stream, MoE
all-to-alls on the ep-comm stream, as :class:`Collective` s carrying the payload a network model can
re-time), then the hand-off to the next stage (or the sampled token back to stage 0). One rank
class per stage; its ``stage_gpus`` GPUs (tensor x expert parallel) meet at every layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream


@dataclass(frozen=True, slots=True)
class Collective:
    """One kind of blocking collective in a stage pass: ``time_s`` for all ``calls`` of it (s)."""

    category: str
    stream: Stream
    time_s: float
    calls: float = 1.0
    payload: CommPayload | None = None


@dataclass(frozen=True, slots=True)
class StagePass:
    """One micro-batch through one stage: compute, blocking collectives, p2p hand-off (s)."""

    compute_s: float
    collectives: tuple[Collective, ...] = ()
    p2p_s: float = 0.0
    p2p_payload: CommPayload | None = None


@dataclass(frozen=True, slots=True)
class InferencePlan:
    """Stage passes of a prefill chunk and of a decode step, and how many of each are simulated."""

    pipeline_parallel: int
    prefill_chunks: int
    prefill: StagePass
    decode_steps: int
    decode: StagePass
    stage_gpus: int = 1
    layers: int = 1
    layer_groups: int = 1


@dataclass(slots=True)
class InferenceGraph:
    """The graph; per micro-batch the op ending its prefill (-1 without prefill) and each decode step;
    per stage its last op so far (while building)."""

    graph: OpGraph
    prefill_done: list[int] = field(default_factory=list)
    token_done: list[list[int]] = field(default_factory=list)
    stage_last: list[int] = field(default_factory=list)


def _stage_pass(graph: OpGraph, plan: InferencePlan, where: tuple[int, str, str], deps: tuple[int, ...]) -> int:
    """Add one stage pass (``where`` = rank, name, phase) after ``deps``; returns its last op."""
    rank, name, phase = where
    work = plan.prefill if phase == "prefill" else plan.decode
    groups = max(1, plan.layer_groups)
    sync = max(1, round(plan.layers / groups))
    last = -1
    for g in range(groups):
        label = f"{name} L{g}" if groups > 1 else name
        op = Op(label, rank, Stream.COMPUTE, phase, work.compute_s / groups, deps=deps if last < 0 else (last,),
                sync_points=sync)
        last = graph.add(op)
        for c in work.collectives:
            if c.time_s > 0:
                repeat = max(1, round(c.calls / groups))
                last = graph.add(Op(f"{c.category} {label}", rank, c.stream, c.category, c.time_s / groups,
                                    payload=c.payload, deps=(last,), repeat=repeat))
    if work.p2p_s > 0:  # to the next stage, or the sampled token back to stage 0
        last = graph.add(Op(f"send {name}", rank, Stream.PP_SEND, "pp-send-recv", work.p2p_s,
                            payload=work.p2p_payload, deps=(last,)))
    return last


def _micro_batch_through(out: InferenceGraph, plan: InferencePlan, name: str, phase: str, start: int) -> int:
    """One micro-batch through every stage, stage 0 after op ``start`` (-1: none); returns its last op.
    A stage starts a pass once its previous pass ended (its collectives block the stage's GPUs)."""
    prev = start
    for s in range(plan.pipeline_parallel):
        deps = tuple(i for i in (prev, out.stage_last[s]) if i >= 0)
        prev = _stage_pass(out.graph, plan, (s, name, phase), deps)
        out.stage_last[s] = prev
    return prev


def build_inference_graph(plan: InferencePlan) -> InferenceGraph:
    """Prefill chunks then decode steps of every micro-batch (see the module docstring)."""
    p = plan.pipeline_parallel
    graph = OpGraph(folded={"stages_simulated": p, "members_in_lock_step": plan.stage_gpus})
    graph.notes = [f"{plan.prefill_chunks} prefill chunks and {plan.decode_steps} decode steps, "
                   f"{p} micro-batches in flight"]
    for s in range(p):
        graph.add_rank(RankClass(f"stage{s}", plan.stage_gpus))
    out = InferenceGraph(graph, [-1] * p, [[] for _ in range(p)], [-1] * p)
    for c in range(plan.prefill_chunks):
        for j in range(p):
            out.prefill_done[j] = _micro_batch_through(out, plan, f"prefill chunk{c}.mb{j}", "prefill", -1)
    for k in range(plan.decode_steps):
        for j in range(p):
            prev = out.token_done[j][k - 1] if k else out.prefill_done[j]
            out.token_done[j].append(_micro_batch_through(out, plan, f"decode step{k}.mb{j}", "decode", prev))
    return out
