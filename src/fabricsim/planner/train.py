"""Search training layouts: enumerate, prune by memory before costing, rank (layer L8).

The walk (see :mod:`fabricsim.planner.space` for the order and the divisibility rules) visits
groups of layouts sharing (tp, pp, cp, ep, dtype, sequence parallel, recompute). Inside a group:

1. **Memory before costing.** Per micro-batch size, every (ZeRO stage, virtual stages) variant is
   sized with :func:`training_memory` (a few microseconds: weights, gradients, optimizer state and
   activations from the cached per-shape stage); only those that fit are ever timed. When none of
   a micro-batch's variants fits, no larger micro-batch is sized either: activation memory does not
   shrink as the micro-batch grows (in-flight micro-batches x their size = min(pp·mb, batch/dp)
   sequences) and the model states do not depend on it, so those blocks are counted as pruned.
   (Memory is *not* monotone along ZeRO stages or virtual stages -- ZeRO-3 keeps two gathered
   layers, interleaving's in-flight factor 1 + (pp-1)/(pp·vpp) peaks at vpp = 2 -- so no pruning
   relies on those.)
2. **Time bound.** A layout's step is at least ``m`` micro-batches of the slowest stage's work
   (the other terms -- bubble, p2p, exposed DP, optimizer -- are non-negative), a figure shared
   by every ZeRO/interleaving variant of a micro-batch size. When that bound is already slower
   than the K-th best plan found, the block's fitting layouts are not timed. The bound is first
   taken over the stage's transformer layers only (per-layer work cached per shape: no stage entry
   is built; every term at most the stage's, so a bound on the bound), and the stage's own is
   computed only when that one can still win (issue 27: most blocks lose without their stage's
   work, and are sized from its memory side alone). Only the step-time objective uses this bound;
   the memory objective skips timing a variant whose memory (known before timing) exceeds the
   K-th best's.
4. **Offload** (:mod:`fabricsim.planner.offload`): a layout that does not fit by itself is tried
   with every offload choice that fits it in HBM and on the tier, each a variant timed like a layout.
   Bounds apply to them too (issue 27: offload search cost 3-4x the search without): in a block the
   time bound rejects, offload choices are sized only when no layout of the block fits by itself,
   and then only until one fits with a choice (what the micro-batch pruning of step 1 needs to
   know; the others are counted as ``offload_unsized``); and an offload variant changes only the
   optimizer step and adds exposed transfers, so its layout's step without those two terms bounds
   it against the K-th best before any of its offload variants is timed (``_time_block``).
   ``PlanSettings.bound_offload=False`` sizes and times them all (tests check the plans equal).
5. **Costing** with the analytic engine (:func:`estimate_training`, microseconds per layout; the
   per-(model, system) context and per-shape stage costs are cached by the engine).

Ranking keeps the K best by (objective, canonical layout key): deterministic whatever the walk.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from fabricsim.engine.training.analytic import TrainingContext, TrainingEstimate, training_context
from fabricsim.engine.training.memory import FRAMEWORK_MEMORY_BYTES, activation_bytes, model_state_bytes
from fabricsim.engine.training.offload import activation_shift, state_shifts
from fabricsim.engine.training.results import TimeBreakdown
from fabricsim.engine.training.simulate import TrainingSimulation
from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.limits import check_cap
from fabricsim.planner import space as sp
from fabricsim.planner.explain import PlanFigures, train_reasons
from fabricsim.planner.offload import by_tier, cpu_can_beat_gpu, offload_key
from fabricsim.planner.space import Group, TrainProblem, TrainSpace
from fabricsim.specs import ModelSpec, ParallelLayout, SystemSpec
from fabricsim.specs.memory_tier import OffloadSpec
from fabricsim.transformer.compute import ShardShape
from fabricsim.transformer.flops import model_dims
from fabricsim.workload.training import DTYPES, TrainingOptions

Progress = Callable[[int, int], None]


class TrainObjective(StrEnum):
    """What "best" means: highest tokens/s (= shortest step at a fixed batch) or least memory per GPU."""

    TOKENS_PER_S = "tokens-per-s"
    STEP_TIME = "step-time"
    MEMORY = "memory"


def parse_train_objective(text: str) -> TrainObjective:
    return parse_choice("objective", text, TrainObjective)


@dataclass(frozen=True, slots=True)
class TrainQuestion:
    """Model and system specs, GPU count, global batch (sequences), sequence length (tokens) and the
    framework settings every layout runs with (None: Megatron-Core's defaults)."""

    model: ModelSpec
    system: SystemSpec
    gpus: int
    global_batch: int
    seq_len: int
    options: TrainingOptions | None = None


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """How many plans to return (``top``), what ranks them, and the offload choices searched
    (:func:`fabricsim.planner.offload.offload_choices`; empty: none)."""

    top: int = 5
    objective: TrainObjective = TrainObjective.TOKENS_PER_S
    offload: tuple[OffloadSpec, ...] = ()
    bound_offload: bool = True  # False: size and time offload variants the time bounds reject (checks the bounds)


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

    ``evaluated``: valid layouts assessed (every one either timed or rejected by a bound) =
    ``costed`` + ``pruned_memory`` + ``pruned_unsized`` + ``pruned_time``;
    ``feasible``: those sized and found to fit in memory (by themselves or with an offload choice);
    ``costed``: those timed by the engine (each with the offload choices that fit it and can still
    win); ``pruned_memory``: sized and too big (with every offload choice sized); ``pruned_unsized``:
    larger micro-batches of a block where nothing fit, rejected without sizing; ``pruned_time``: not
    timed (time bound): those that fit, and ``offload_unsized``;
    ``offload_unsized`` (offload search only): layouts of a block the time bound rejects that do not
    fit by themselves and whose offload choices were not sized (some layout of the block fits
    already, so the micro-batch pruning does not need them): whether they fit with a choice is not
    known, so the layouts that fit number from ``feasible`` to ``feasible + offload_unsized``
    (``PlanSettings.bound_offload=False`` sizes them: 0, ``feasible`` exact). Hence also
    ``feasible + offload_unsized = costed + pruned_time``.
    ``smallest_memory_bytes`` and ``smallest_memory_layout``: the least memory per GPU seen;
    ``faster_unfit``: a layout faster than the best plan that does not fit (see :func:`_faster_unfit`).
    """

    plans: tuple[TrainPlan, ...]
    evaluated: int
    feasible: int
    costed: int
    pruned_memory: int
    pruned_unsized: int
    pruned_time: int
    groups: int
    smallest_memory_bytes: float
    smallest_memory_layout: ParallelLayout | None
    faster_unfit: TrainingEstimate | None = None
    offload_unsized: int = 0
    searched_offload: bool = False  # offload choices were searched (settings.offload not empty)


@dataclass(slots=True)
class _Walk:
    """Mutable state of one search (local to :func:`search_train`)."""

    question: TrainQuestion
    problem: TrainProblem
    space: TrainSpace
    settings: PlanSettings
    capacity_bytes: float
    context: TrainingContext  # the engine's caches for this search (model, system)
    best: list = field(default_factory=list)  # heap of (-score, -key, estimate): the K best
    evaluated: int = 0
    feasible: int = 0
    costed: int = 0
    pruned_memory: int = 0
    pruned_unsized: int = 0
    pruned_time: int = 0
    offload_unsized: int = 0
    smallest: tuple[float, ParallelLayout | None] = (float("inf"), None)
    unfit: list = field(default_factory=list)  # heap of (-bound, -key, layout): best time bounds that do not fit
    offload_always: bool = False  # try offload on layouts that fit without it (see planner.offload)
    offload_groups: tuple[tuple[OffloadSpec, ...], ...] = ()  # settings.offload grouped by tier
    states: dict = field(default_factory=dict)  # model-state bytes per (entry's parameters, dp, edp, ZeRO stages)


_RECOMPUTE_INDEX = {r: i for i, r in enumerate(sp.RECOMPUTE_ORDER)}
_DTYPE_INDEX = {d: i for i, d in enumerate(DTYPES)}


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
        _DTYPE_INDEX[layout.dtype],
        layout.expert_tp,
    )


def _neg_key(key: tuple) -> tuple:
    return tuple(-x for x in key)


def plan_key(estimate: TrainingEstimate) -> tuple:
    """Canonical order of plans: the layout's key, then the offload choice's (none first)."""
    return (*layout_key(estimate.layout), *offload_key(estimate.tier.offload if estimate.tier else None))


def _offer(walk: _Walk, estimate: TrainingEstimate) -> None:
    score = (estimate.step_time_s, estimate.memory.total)
    if walk.settings.objective is TrainObjective.MEMORY:
        score = (estimate.memory.total, estimate.step_time_s)
    item = ((-score[0], -score[1]), _neg_key(plan_key(estimate)), estimate)
    if len(walk.best) < walk.settings.top:
        heapq.heappush(walk.best, item)
    elif item[:2] > walk.best[0][:2]:
        heapq.heapreplace(walk.best, item)


def _time_bound_beaten(walk: _Walk, bound_s: float) -> bool:
    """True when no layout whose step is at least ``bound_s`` can enter the K best."""
    if walk.settings.objective is TrainObjective.MEMORY or len(walk.best) < walk.settings.top:
        return False
    return bound_s > -walk.best[0][0][0]


def _memory_bound_beaten(walk: _Walk, memory_bytes: float) -> bool:
    """True when, ranking by memory, a variant of ``memory_bytes`` cannot enter the K best (exact:
    its memory is known before timing; a tie on memory still gets timed for the step tie-break)."""
    if walk.settings.objective is not TrainObjective.MEMORY or len(walk.best) < walk.settings.top:
        return False
    return memory_bytes > -walk.best[0][0][0]


Variant = tuple[ParallelLayout, OffloadSpec | None, float]  # layout, offload choice, HBM bytes


def _sized(
    walk: _Walk,
    group: Group,
    first_of: tuple[ParallelLayout, ShardShape],
    block: tuple[tuple[int, ...], tuple[int, ...]],
    offload: bool,
) -> tuple[list[Variant], ParallelLayout | None, int, int]:
    """(variants of the block that fit, its first layout that does not fit in HBM by itself,
    layouts that fit some way, layouts left unsized with offload): every (ZeRO stage, virtual
    stages) layout sized, then its offload choices where they can help
    (:mod:`fabricsim.planner.offload`). Without ``offload`` (a block the time bound rejects: its
    variants are only counted, none is returned) offload choices are sized only when no layout of
    the block fits by itself, and then (least HBM first) only until one fits with a choice; the other
    layouts that do not fit by themselves are counted as unsized (what the micro-batch pruning needs
    is known).
    ``first_of``: the block's layout of its first ZeRO stage and virtual-stage count, and its shard shape."""
    q, context = walk.question, walk.context
    first, shape = first_of
    zeros, virtual = block  # _block_size
    micro_batch = first.micro_batch_size
    # memory_breakdown per layout, factored: the stage entry is shared (its key has no ZeRO stage or
    # virtual stages), the model states depend on the ZeRO stage only, the activations on the virtual
    # stages only (and the layout rules, hence the micro-batch count, not on the ZeRO stage)
    entry = context.stage_memory(first, q.seq_len, shape)  # sizing needs no stage work (a beaten block has none)
    dp, edp = first.data_context_parallel, first.expert_data_parallel
    # the model states do not depend on the micro-batch either: sized once per group and ZeRO stage
    params = (entry.dense_params, entry.expert_params, entry.gradient_bytes, entry.layers, dp, edp)
    states = walk.states.get((params, zeros))
    if states is None:
        states = walk.states[(params, zeros)] = [model_state_bytes(entry, (zero, dp, edp)) for zero in zeros]
    # the micro-batch count does not depend on the virtual stages (the walk's layouts are valid: checked once)
    microbatches = context.microbatches(first, q.global_batch, q.seq_len)
    activations = [
        activation_bytes(group.layout(micro_batch, zeros[0], vpp) if vpp != virtual[0] else first, entry, microbatches)
        for vpp in virtual
    ]
    capacity = walk.capacity_bytes
    rows = []  # (zero, vpp, total, (zero index, vpp index)): MemoryBreakdown.total's additions, in its order
    for z, (zero, (weights, gradients, optimizer)) in enumerate(zip(zeros, states, strict=True)):
        held = weights + gradients + optimizer
        rows += [(zero, vpp, held + acts + FRAMEWORK_MEMORY_BYTES, (z, v))
                 for v, (vpp, acts) in enumerate(zip(virtual, activations, strict=True))]
    unfit = None
    for zero, vpp, total, _ in rows:  # in the walk's order: the first of equals is kept
        if total < walk.smallest[0]:
            walk.smallest = (total, group.layout(micro_batch, zero, vpp))
        if unfit is None and total > capacity:
            unfit = group.layout(micro_batch, zero, vpp)
    alone = sum(row[2] <= capacity for row in rows)
    if not walk.offload_groups:
        if not offload:
            return [], unfit, alone, 0
        return [(group.layout(micro_batch, zero, vpp), None, total) for zero, vpp, total, _ in rows
                if total <= capacity], unfit, alone, 0
    if not offload and alone:  # counted only: no offload choice to size
        return [], unfit, alone, len(rows) - alone
    shifts = _BlockShifts(group, first, zeros, (entry, states, activations), walk.problem.global_batch)
    if not offload:
        # none fits by itself: offload choices sized, least HBM first, until one layout fits with one
        for tried, (_, _, total, index) in enumerate(sorted(rows, key=lambda row: row[2]), 1):
            if context.fitting_choices(shifts.of(index), total, walk.offload_groups):
                return [], unfit, 1, len(rows) - tried
        return [], unfit, 0, 0
    fitting: list[Variant] = []
    feasible = 0
    for zero, vpp, total, index in rows:
        layout = group.layout(micro_batch, zero, vpp)
        fits = total <= capacity
        if fits:
            fitting.append((layout, None, total))
        if not fits or walk.offload_always:
            offloads = context.fitting_choices(shifts.of(index), total, walk.offload_groups)
            fitting += [(layout, choice, hbm_bytes) for choice, hbm_bytes in offloads]
            fits = fits or bool(offloads)
        feasible += fits
    return fitting, unfit, feasible, 0


class _BlockShifts:
    """The offload class shifts of a block's layouts, factored as its memory is (the optimizer's and
    the weights' per ZeRO stage, the activations' per virtual-stage count) and computed when first
    asked for (:meth:`TrainingContext.fitting_offloads` per layout, its class shifts shared)."""

    __slots__ = ("_activations", "_first", "_group", "_microbatches", "_sized", "_states", "_zeros")

    def __init__(self, group: Group, first: ParallelLayout, zeros: tuple[int, ...], sized: tuple, batch: int) -> None:
        self._group, self._first, self._zeros, self._sized = group, first, zeros, sized
        self._microbatches = batch // (first.data_parallel * first.micro_batch_size)
        self._states: dict[int, tuple] = {}
        self._activations: dict[int, object] = {}

    def of(self, index: tuple[int, int]) -> tuple:
        """(optimizer, weights, activations) shifts of the layout at (ZeRO index, vpp index)."""
        z, v = index
        entry, states, activations = self._sized
        held = self._states.get(z)
        if held is None:
            layout = self._group.layout(self._first.micro_batch_size, self._zeros[z], self._first.virtual_stages)
            held = self._states[z] = state_shifts(layout, entry, states[z], self._microbatches)
        acts = self._activations.get(v)
        if acts is None:
            acts = self._activations[v] = activation_shift(entry, activations[v])
        return (*held, acts)


def _block_size(walk: _Walk, group: Group, micro_batch: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    microbatches = walk.problem.global_batch // (group.data_parallel * micro_batch)
    zeros = sp.zero_options(walk.space, group)
    return zeros, sp.virtual_options(walk.problem, walk.space, group, microbatches)


def _prune_rest(walk: _Walk, group: Group, sizes: tuple[int, ...]) -> None:
    """Count the blocks of ``sizes`` as rejected by the memory bound without sizing them."""
    for micro_batch in sizes:
        zeros, virtual = _block_size(walk, group, micro_batch)
        walk.pruned_unsized += len(zeros) * len(virtual)
        walk.evaluated += len(zeros) * len(virtual)


def _lower_bound_s(walk: _Walk, layout: ParallelLayout, body: ShardShape | None = None) -> float:
    """m micro-batches of the slowest stage's work: no variant of the block can be faster. With
    ``body`` (the layout's shard shape), of its transformer layers' work only (no output layer; the
    stage is not sized): every field is at most the stage's, so (rounded additions and products
    being monotone) this is at most the first bound, a bound on it that costs a few look-ups."""
    q = walk.question
    work = walk.context.body_work(layout, q.seq_len, body) if body else walk.context.stage(layout, q.seq_len).work
    per_microbatch_s = work.forward_s + work.backward_s + work.recompute_s
    per_microbatch_s += work.tp_comm_s + work.cp_comm_s + work.ep_comm_s
    return q.global_batch // (layout.data_parallel * layout.micro_batch_size) * per_microbatch_s


def _search_group(walk: _Walk, group: Group) -> None:
    sizes = sp.micro_batches(walk.problem, walk.space, group)
    position = 0
    while position < len(sizes):
        micro_batch = sizes[position]
        position += 1
        zeros, virtual = _block_size(walk, group, micro_batch)
        block = len(zeros) * len(virtual)
        if block == 0:  # no (ZeRO, vpp) variant is allowed here, e.g. --vpp 2 where m is not a multiple of pp
            continue
        first = group.layout(micro_batch, zeros[0], virtual[0])
        # the cheap bound first: when it loses already, so does the stage's (its step time is not needed)
        shape = walk.context.shard_shape(first, walk.question.seq_len)
        bound_s, exact = _lower_bound_s(walk, first, body=shape), False
        beaten = _time_bound_beaten(walk, bound_s)
        if not beaten:
            bound_s, exact = _lower_bound_s(walk, first), True
            beaten = _time_bound_beaten(walk, bound_s)
        # offload variants of a block the time bound rejects would not be timed: not sized either
        sized = not beaten or not walk.settings.bound_offload
        fitting, unfit, feasible, unsized = _sized(walk, group, (first, shape), (zeros, virtual), sized)
        walk.evaluated += block
        walk.pruned_memory += block - feasible - unsized
        walk.feasible += feasible
        walk.offload_unsized += unsized
        if unfit is not None:
            _note_unfit(walk, bound_s, unfit, None if exact else first)
        if not feasible and not unsized:  # memory does not shrink with a larger micro-batch: neither do they fit
            position = _skip_unfit(walk, group, sizes, position)
            continue
        if beaten:
            walk.pruned_time += feasible + unsized
            continue
        _time_block(walk, fitting)
        walk.costed += feasible  # layouts; with offload each may be timed with several choices


def offload_step_bound(time: TimeBreakdown) -> float:
    """A lower bound on the step of any offload variant of the layout whose step without offload
    is ``time``: the same terms but the optimizer step and the exposed transfers, taken as zero."""
    return time._replace(optimizer_s=0.0, offload_s=0.0).total_s


def _time_block(walk: _Walk, fitting: list[Variant]) -> None:
    """Offer every variant that can still enter the K best. An offload variant differs from its
    layout without offload only in the optimizer step (on the tier's CPU, possibly faster) and the
    exposed transfers (>= 0), the last two terms of :attr:`TimeBreakdown.total_s`; so its step is
    at least the layout's step with both zero (rounded addition is monotone: an exact bound). The
    layout is timed without offload first, and its offload variants only while that bound can win."""
    q = walk.question
    bounds: dict[ParallelLayout, float] = {}
    for layout, offload, memory_bytes in fitting:
        if _memory_bound_beaten(walk, memory_bytes):
            continue
        if offload is not None and walk.settings.bound_offload:
            if layout not in bounds:
                bounds[layout] = offload_step_bound(walk.context.estimate(layout, q.global_batch, q.seq_len).time)
            if _time_bound_beaten(walk, bounds[layout]):
                continue
        _offer(walk, walk.context.estimate(layout, q.global_batch, q.seq_len, offload))


def _skip_unfit(walk: _Walk, group: Group, sizes: tuple[int, ...], position: int) -> int:
    """Prune the micro-batch sizes from ``position`` on; under offload search keep the size with a
    single micro-batch per step (its gradients stream out: the one exception to monotone memory)."""
    last = len(sizes)
    single = walk.problem.global_batch // group.data_parallel
    if walk.offload_groups and position < len(sizes) and sizes[-1] == single:
        last -= 1
    _prune_rest(walk, group, sizes[position:last])
    return last


UNFIT_KEPT = 8  # unfit layouts with the best time bounds kept for ``faster_unfit``


def _note_unfit(walk: _Walk, bound_s: float, layout: ParallelLayout, first: ParallelLayout | None = None) -> None:
    """Keep ``layout`` among the unfit layouts with the best bounds; ``first``: its block's first
    layout when ``bound_s`` is only a bound on the block's bound (computed here where it matters)."""
    if len(walk.unfit) == UNFIT_KEPT and -bound_s < walk.unfit[0][0]:
        return  # slower than every kept one: would not enter whatever its key (the test below, first term)
    if first is not None:
        bound_s = _lower_bound_s(walk, first)
        if len(walk.unfit) == UNFIT_KEPT and -bound_s < walk.unfit[0][0]:
            return
    item = (-bound_s, _neg_key(layout_key(layout)), layout)
    if len(walk.unfit) < UNFIT_KEPT:
        heapq.heappush(walk.unfit, item)
    elif item[:2] > walk.unfit[0][:2]:
        heapq.heapreplace(walk.unfit, item)


def _faster_unfit(walk: _Walk, plans: tuple[TrainPlan, ...]) -> TrainingEstimate | None:
    """Among the sized layouts that do not fit in HBM by themselves, the first (by time bound) that,
    costed without offload, is faster than the best plan: what memory costs (None otherwise, and for
    the memory objective). Several are kept because a time bound is not the time."""
    if walk.settings.objective is TrainObjective.MEMORY:
        return None
    q = walk.question
    for negative_bound, _, layout in sorted(walk.unfit, reverse=True):
        if plans and -negative_bound >= plans[0].figures.step_time_s:
            return None
        estimate = walk.context.estimate(layout, q.global_batch, q.seq_len)
        if not plans or estimate.step_time_s < plans[0].figures.step_time_s:
            return estimate
    return None


def train_problem(question: TrainQuestion) -> TrainProblem:
    split = question.options.pipeline_accounting if question.options else None
    accounted, chunks = (split.accounted, len(split.chunks)) if split else (0, 0)
    return TrainProblem(
        model_dims(question.model), question.system, question.gpus, question.global_batch, question.seq_len, accounted,
        chunks,
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
    problem = train_problem(question)
    sp.check_space(problem, space)
    capacity_bytes = question.system.device.hbm_capacity_bytes
    context = training_context(question.model, question.system, question.options)
    walk = _Walk(question, problem, space, settings, capacity_bytes, context)
    if settings.offload:
        hbm_Bps = min(walk.context.rates(dtype).hbm_Bps for dtype in sp.default_dtypes(question.system))
        memory_goal = settings.objective is TrainObjective.MEMORY  # offload always lowers HBM bytes
        walk.offload_always = memory_goal or cpu_can_beat_gpu(question.system, settings.offload, hbm_Bps)
        walk.offload_groups = by_tier(settings.offload)
    groups = list(sp.train_groups(problem, space))
    step = max(1, len(groups) // 200)
    for index, group in enumerate(groups):
        _search_group(walk, group)
        check_cap("plan train layouts", walk.evaluated, "SEARCH_LAYOUTS")  # a guard on the search's work
        if on_progress is not None and (index % step == 0 or index == len(groups) - 1):
            on_progress(index + 1, len(groups))
    if walk.evaluated == 0:
        raise FabricsimError(
            "layout",
            "no layout satisfies --vpp/--zero/--micro-batch together with the other constraints",
            "interleaving (vpp > 1) needs pp > 1, layers divisible by pp*vpp and micro-batches divisible by pp",
        )
    ranked = [item[2] for item in sorted(walk.best, reverse=True)]
    plans = explain_plans([TrainPlan(e, analytic_figures(e)) for e in ranked])
    return TrainSearch(
        plans=plans,
        evaluated=walk.evaluated,
        feasible=walk.feasible,
        costed=walk.costed,
        pruned_memory=walk.pruned_memory,
        pruned_unsized=walk.pruned_unsized,
        pruned_time=walk.pruned_time,
        groups=len(groups),
        smallest_memory_bytes=walk.smallest[0],
        smallest_memory_layout=walk.smallest[1],
        faster_unfit=_faster_unfit(walk, plans),
        offload_unsized=walk.offload_unsized,
        searched_offload=bool(walk.offload_groups),
    )
