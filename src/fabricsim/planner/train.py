"""Search training layouts: enumerate, prune by memory before costing, rank (layer L8).

The walk (see :mod:`fabricsim.planner.space` for the order and the divisibility rules) visits
groups of layouts sharing (tp, pp, cp, ep, dtype, sequence parallel, recompute). Inside a group:

1. **Memory bound before costing.** Per micro-batch size, the least-memory variant (the most
   sharded ZeRO stage, no interleaving) is sized first with :func:`training_memory`. If it does
   not fit, neither does any other variant of that micro-batch, nor any larger micro-batch
   (activation memory is non-decreasing in the micro-batch, weights do not depend on it), so the
   whole block is counted as pruned and never timed. Along the virtual stages (more in-flight
   activations) the first variant that does not fit ends the row for the same reason.
2. **Time bound.** A layout's step is at least ``m`` micro-batches of the slowest stage's work
   (the other terms -- bubble, p2p, exposed DP, optimizer -- are non-negative), a figure shared
   by every ZeRO/interleaving variant of a micro-batch size. When that bound is already slower
   than the K-th best plan found, the block is sized for memory only (so ``feasible`` stays exact)
   and not timed. Only the step-time objective uses this bound.
3. **Costing** with the analytic engine (:func:`estimate_training`, microseconds per layout; the
   per-(model, system) context and per-shape stage costs are cached by the engine).

Ranking keeps the K best by (objective, canonical layout key): deterministic whatever the walk.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from fabricsim.engine.analytic import TrainingEstimate, estimate_training, training_context, training_memory
from fabricsim.engine.simulate_training import TrainingSimulation
from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.planner import space as sp
from fabricsim.planner.explain import PlanFigures, train_reasons
from fabricsim.planner.space import Group, TrainProblem, TrainSpace
from fabricsim.specs import ModelSpec, ParallelLayout, SystemSpec
from fabricsim.transformer.flops import model_dims

Progress = Callable[[int, int], None]


class TrainObjective(StrEnum):
    """What "best" means: highest tokens/s (= shortest step at a fixed batch) or least memory per GPU."""

    TOKENS_PER_S = "tokens-per-s"
    STEP_TIME = "step-time"
    MEMORY = "memory"


def parse_train_objective(text: str) -> TrainObjective:
    try:
        return TrainObjective(text)
    except ValueError:
        raise unknown_name("objective", text, [o.value for o in TrainObjective]) from None


@dataclass(frozen=True, slots=True)
class TrainQuestion:
    """Model and system specs, GPU count, global batch (sequences) and sequence length (tokens)."""

    model: ModelSpec
    system: SystemSpec
    gpus: int
    global_batch: int
    seq_len: int


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """How many plans to return (``top``) and what ranks them."""

    top: int = 5
    objective: TrainObjective = TrainObjective.TOKENS_PER_S


@dataclass(frozen=True, slots=True)
class TrainPlan:
    """One ranked layout: its analytic estimate, the figures it is ranked on (the simulated step
    when refined), why it loses to the best (empty for the best) and the simulation if refined."""

    estimate: TrainingEstimate
    figures: PlanFigures
    reasons: tuple[str, ...] = ()
    simulation: TrainingSimulation | None = None


def analytic_figures(estimate: TrainingEstimate) -> PlanFigures:
    return PlanFigures(estimate.time.as_dict(), estimate.step_time_s, estimate.memory.total)


def figures_score(objective: TrainObjective, figures: PlanFigures) -> tuple[float, float]:
    """Lower is better: (step, memory), or (memory, step) for the memory objective."""
    if objective is TrainObjective.MEMORY:
        return (figures.memory_bytes, figures.step_time_s)
    return (figures.step_time_s, figures.memory_bytes)


def explain_plans(plans: list[TrainPlan]) -> tuple[TrainPlan, ...]:
    """The plans (best first) with the reasons each one loses to the first."""
    if not plans:
        return ()
    best = plans[0].figures
    return (plans[0], *(replace(p, reasons=train_reasons(best, p.figures)) for p in plans[1:]))


@dataclass(frozen=True, slots=True)
class TrainSearch:
    """The outcome: ranked plans and what the walk did.

    ``evaluated``: valid layouts assessed (every one either timed or rejected by a bound);
    ``feasible``: those that fit in memory; ``costed``: those timed by the engine;
    ``pruned_memory``/``pruned_time``: rejected by the memory bound / only sized (time bound);
    ``smallest_memory_bytes`` and ``smallest_memory_layout``: the least memory per GPU seen.
    """

    plans: tuple[TrainPlan, ...]
    evaluated: int
    feasible: int
    costed: int
    pruned_memory: int
    pruned_time: int
    groups: int
    smallest_memory_bytes: float
    smallest_memory_layout: ParallelLayout | None


@dataclass(slots=True)
class _Walk:
    """Mutable state of one search (local to :func:`search_train`)."""

    question: TrainQuestion
    problem: TrainProblem
    space: TrainSpace
    settings: PlanSettings
    capacity_bytes: float
    best: list = field(default_factory=list)  # heap of (-score, -key, estimate): the K best
    evaluated: int = 0
    feasible: int = 0
    costed: int = 0
    pruned_memory: int = 0
    pruned_time: int = 0
    smallest: tuple[float, ParallelLayout | None] = (float("inf"), None)


_RECOMPUTE_INDEX = {r: i for i, r in enumerate(sp.RECOMPUTE_ORDER)}


def layout_key(layout: ParallelLayout) -> tuple:
    """Canonical order of layouts (breaks ties between equal objective values)."""
    return (
        layout.tensor_parallel,
        layout.pipeline_parallel,
        layout.data_parallel,
        layout.context_parallel,
        layout.expert_parallel,
        layout.virtual_stages,
        layout.micro_batch_size,
        layout.zero_stage,
        _RECOMPUTE_INDEX[layout.recompute],
        int(layout.sequence_parallel),
        layout.dtype,
    )


def _neg_key(key: tuple) -> tuple:
    return tuple(-x if isinstance(x, int) else tuple(-ord(c) for c in x) for x in key)


def _offer(walk: _Walk, estimate: TrainingEstimate) -> None:
    score = (estimate.step_time_s, estimate.memory.total)
    if walk.settings.objective is TrainObjective.MEMORY:
        score = (estimate.memory.total, estimate.step_time_s)
    item = ((-score[0], -score[1]), _neg_key(layout_key(estimate.layout)), estimate)
    if len(walk.best) < walk.settings.top:
        heapq.heappush(walk.best, item)
    elif item[:2] > walk.best[0][:2]:
        heapq.heapreplace(walk.best, item)


def _time_bound_beaten(walk: _Walk, bound_s: float) -> bool:
    """True when no layout whose step is at least ``bound_s`` can enter the K best."""
    if walk.settings.objective is TrainObjective.MEMORY or len(walk.best) < walk.settings.top:
        return False
    return bound_s > -walk.best[0][0][0]


def _note_memory(walk: _Walk, layout: ParallelLayout, memory_bytes: float) -> None:
    if memory_bytes < walk.smallest[0]:
        walk.smallest = (memory_bytes, layout)


def _row(walk: _Walk, group: Group, micro_batch: int, zero: int, virtual: tuple[int, ...], timed: bool) -> None:
    """One ZeRO stage's virtual-stage variants, least memory first; stop at the first that does not fit."""
    q = walk.question
    for index, vpp in enumerate(virtual):
        layout = group.layout(micro_batch, zero, vpp)
        walk.evaluated += 1
        if timed:
            estimate = estimate_training(q.model, q.system, layout, q.global_batch, q.seq_len)
            walk.costed += 1
            memory_bytes = estimate.memory.total
        else:
            memory_bytes = training_memory(q.model, q.system, layout, q.global_batch, q.seq_len).total
            walk.pruned_time += 1
        _note_memory(walk, layout, memory_bytes)
        if memory_bytes > walk.capacity_bytes:
            walk.pruned_memory += len(virtual) - index - 1
            walk.evaluated += len(virtual) - index - 1
            return
        walk.feasible += 1
        if timed:
            _offer(walk, estimate)


def _block_size(walk: _Walk, group: Group, micro_batch: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    microbatches = walk.problem.global_batch // (group.data_parallel * micro_batch)
    zeros = sp.zero_options(walk.space, group)
    return zeros, sp.virtual_options(walk.problem, walk.space, group, microbatches)


def _search_group(walk: _Walk, group: Group) -> None:
    q = walk.question
    ctx = training_context(q.model, q.system)
    sizes = sp.micro_batches(walk.problem, walk.space, group)
    for position, micro_batch in enumerate(sizes):
        zeros, virtual = _block_size(walk, group, micro_batch)
        if not zeros or not virtual:
            continue
        least = group.layout(micro_batch, zeros[0], virtual[0])
        memory_bytes = training_memory(q.model, q.system, least, q.global_batch, q.seq_len).total
        _note_memory(walk, least, memory_bytes)
        if memory_bytes > walk.capacity_bytes:  # this block and every larger micro-batch cannot fit
            for larger in sizes[position:]:
                more_zeros, more_virtual = _block_size(walk, group, larger)
                walk.pruned_memory += len(more_zeros) * len(more_virtual)
                walk.evaluated += len(more_zeros) * len(more_virtual)
            return
        work = ctx.stage(least, q.seq_len).work
        per_microbatch_s = work.forward_s + work.backward_s + work.recompute_s
        per_microbatch_s += work.tp_comm_s + work.cp_comm_s + work.ep_comm_s
        microbatches = q.global_batch // (group.data_parallel * micro_batch)
        timed = not _time_bound_beaten(walk, microbatches * per_microbatch_s)
        for zero in zeros:
            _row(walk, group, micro_batch, zero, virtual, timed)


def train_problem(question: TrainQuestion) -> TrainProblem:
    return TrainProblem(
        model_dims(question.model), question.system, question.gpus, question.global_batch, question.seq_len
    )


def search_train(
    question: TrainQuestion,
    space: TrainSpace | None = None,
    settings: PlanSettings | None = None,
    on_progress: Progress | None = None,
) -> TrainSearch:
    """Rank the layouts of ``question`` by ``settings.objective``; return the ``settings.top`` best.

    Raises :class:`FabricsimError` when the constraints leave no valid layout; when layouts exist
    but none fits in memory the result has no plans, ``feasible`` 0 and the smallest memory need.
    ``on_progress(groups_done, groups_total)`` is called as the walk advances (never prints).
    """
    space = space or TrainSpace()
    settings = settings or PlanSettings()
    if settings.top < 1:
        raise FabricsimError("top", f"must be at least 1, got {settings.top}")
    problem = train_problem(question)
    sp.check_space(problem, space)
    walk = _Walk(question, problem, space, settings, question.system.device.hbm_capacity_bytes)
    groups = list(sp.train_groups(problem, space))
    step = max(1, len(groups) // 200)
    for index, group in enumerate(groups):
        _search_group(walk, group)
        if on_progress is not None and (index % step == 0 or index == len(groups) - 1):
            on_progress(index + 1, len(groups))
    ranked = [item[2] for item in sorted(walk.best, reverse=True)]
    plans = explain_plans([TrainPlan(e, analytic_figures(e)) for e in ranked])
    return TrainSearch(
        plans=plans,
        evaluated=walk.evaluated,
        feasible=walk.feasible,
        costed=walk.costed,
        pruned_memory=walk.pruned_memory,
        pruned_time=walk.pruned_time,
        groups=len(groups),
        smallest_memory_bytes=walk.smallest[0],
        smallest_memory_layout=walk.smallest[1],
    )
