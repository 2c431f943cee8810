"""Search inference layouts and batch sizes for throughput at an SLO, or for latency (layer L8).

Space: tensor parallel (divides the GPUs and the attention heads, matches the KV heads), expert
parallel for MoE models (divides the experts; tp and ep divide one another), pipeline stages (at
most the layers), weight dtype (bf16, plus fp8 where the device has native FP8) and KV dtype (the
inference engine's default for the weight dtype unless given); the rest of the GPUs are replicas
(``gpus = replicas x pp x max(tp, ep)``). Per layout:

1. **Memory before costing**: the largest batch whose paged KV fits the KV budget
   (:func:`~fabricsim.engine.inference.largest_batch`, closed form); zero means the weights and
   workspace leave no room and the layout is pruned without costing.
2. **Batch** (objective ``throughput``): the largest batch up to that limit (and ``max_batch``)
   meeting the TPOT/TTFT SLOs, by bisection -- both grow with the batch in the static-batch model
   (more tokens per step, more KV read per step). Without SLOs: the largest batch that fits.
   Objective ``latency``: the given batch (default 1), ranked by end-to-end latency.
3. **Costing** with :func:`~fabricsim.engine.inference.infer_estimate` (milliseconds per point).

Counts: ``evaluated`` layouts = ``pruned_memory`` (no batch fits: not costed) + ``costed`` (layouts
the engine priced); ``costed`` = ``feasible`` (fit and meet the SLOs) + ``pruned_slo`` (even batch 1
misses an SLO). ``estimates`` counts the engine calls: a costed layout is priced at each batch size
its bisection tries, so there are more estimates than layouts.

Ranking: (objective, canonical layout key), deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum

from fabricsim.engine.inference.analytic import InferEstimate, InferScenario, infer_estimate, largest_batch
from fabricsim.engine.inference.step import INFERENCE_DTYPES, InferenceLayout, check_dtype
from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.limits import check_cap
from fabricsim.planner.explain import MIN_SHARE, part_deltas
from fabricsim.planner.space import default_dtypes, divisors
from fabricsim.specs import ModelSpec, SystemSpec
from fabricsim.specs.layout import LONG_NAMES

Progress = Callable[[int, int], None]

_DTYPE_ORDER = {dtype: i for i, dtype in enumerate(INFERENCE_DTYPES)}


class InferObjective(StrEnum):
    """``throughput``: most output tokens/s meeting the SLOs; ``latency``: least end-to-end latency."""

    THROUGHPUT = "throughput"
    LATENCY = "latency"


def parse_infer_objective(text: str) -> InferObjective:
    return parse_choice("objective", text, InferObjective)


@dataclass(frozen=True, slots=True)
class InferQuestion:
    """Model and system specs, GPU count, prompt and output lengths (tokens)."""

    model: ModelSpec
    system: SystemSpec
    gpus: int
    input_len: int
    output_len: int


@dataclass(frozen=True, slots=True)
class InferSpace:
    """Allowed values per dimension (``None``: every valid value); ``batch`` fixes the batch per
    replica, ``max_batch`` caps it."""

    tensor_parallel: tuple[int, ...] | None = None
    pipeline_parallel: tuple[int, ...] | None = None
    expert_parallel: tuple[int, ...] | None = None
    dtype: tuple[str, ...] | None = None
    kv_dtype: tuple[str, ...] | None = None
    batch: int | None = None
    max_batch: int | None = None


@dataclass(frozen=True, slots=True)
class InferGoal:
    """Objective, SLOs (seconds; None: none) and how many plans to keep."""

    objective: InferObjective = InferObjective.THROUGHPUT
    tpot_slo_s: float | None = None
    ttft_slo_s: float | None = None
    top: int = 5


@dataclass(frozen=True, slots=True)
class InferPlan:
    """One ranked (layout, batch): its estimate, what limited its batch, why it loses to the best."""

    layout: InferenceLayout
    estimate: InferEstimate
    batch_limit: str
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class InferSearch:
    """Ranked plans and counts (module docstring): ``evaluated`` layouts, ``feasible`` (fit and meet
    the SLOs), ``costed`` layouts the engine priced, layouts pruned by memory (before costing) and by
    the SLOs (after), ``estimates`` engine calls (batch sizes priced), the smallest memory need."""

    plans: tuple[InferPlan, ...]
    evaluated: int
    feasible: int
    costed: int
    pruned_memory: int
    pruned_slo: int
    smallest_memory_bytes: float | None
    smallest_memory_layout: InferenceLayout | None
    estimates: int = 0


@dataclass(slots=True)
class _Walk:
    question: InferQuestion
    goal: InferGoal
    space: InferSpace
    found: list = field(default_factory=list)
    costed: int = 0  # layouts priced
    estimates: int = 0  # engine calls (batch sizes priced)
    pruned_memory: int = 0
    pruned_slo: int = 0


def layout_key(layout: InferenceLayout) -> tuple:
    return (
        layout.tensor_parallel,
        layout.pipeline_parallel,
        layout.expert_parallel,
        _DTYPE_ORDER[layout.weight_dtype],
        _DTYPE_ORDER[layout.kv_dtype],
    )


def _allowed(values: tuple, given: tuple | None) -> tuple:
    return values if given is None else tuple(v for v in values if v in set(given))


def _shapes(question: InferQuestion, space: InferSpace) -> Iterator[tuple[int, int, int]]:
    """(tp, ep, pp) that shard the model and divide the GPUs, in canonical order."""
    model, gpus = question.model, question.gpus
    kv = model.kv_heads
    tps = [
        t for t in divisors(gpus) if model.num_attention_heads % t == 0 and (model.is_mla or not kv % t or not t % kv)
    ]
    eps = [e for e in divisors(model.num_local_experts) if e <= gpus] if model.is_moe else [1]
    for tp in _allowed(tuple(tps), space.tensor_parallel):
        for ep in _allowed(tuple(eps), space.expert_parallel):
            stage = max(tp, ep)
            if stage % min(tp, ep) or gpus % stage:
                continue
            pps = [p for p in divisors(gpus // stage) if p <= model.num_hidden_layers]
            for pp in _allowed(tuple(pps), space.pipeline_parallel):
                yield tp, ep, pp


def _dtypes(question: InferQuestion, space: InferSpace) -> Iterator[tuple[str, str]]:
    for dtype in space.dtype or default_dtypes(question.system):
        default_kv = "fp8" if dtype in ("fp8", "fp4") else "bf16"
        for kv_dtype in space.kv_dtype or (default_kv,):
            yield dtype, kv_dtype


def infer_layouts(question: InferQuestion, space: InferSpace) -> list[InferenceLayout]:
    """Every valid layout of the space, in canonical order."""
    out = []
    for tp, ep, pp in _shapes(question, space):
        for dtype, kv_dtype in _dtypes(question, space):
            replicas = question.gpus // (pp * max(tp, ep))
            out.append(InferenceLayout(tp, pp, ep, dtype, kv_dtype, replicas))
    return out


def _estimate(walk: _Walk, layout: InferenceLayout, batch: int) -> InferEstimate:
    q = walk.question
    walk.estimates += 1
    return infer_estimate(InferScenario(q.model, q.system, layout, q.input_len, q.output_len, batch))


def _fails(goal: InferGoal, estimate: InferEstimate) -> str:
    """What a batch breaks first: ``memory``, ``TPOT SLO`` or ``TTFT SLO`` ('' if nothing)."""
    if not estimate.fits:
        return "memory"
    if goal.tpot_slo_s is not None and estimate.tpot_s > goal.tpot_slo_s:
        return "TPOT SLO"
    if goal.ttft_slo_s is not None and estimate.ttft_s > goal.ttft_slo_s:
        return "TTFT SLO"
    return ""


def _best_batch(walk: _Walk, layout: InferenceLayout, limit: int, reason: str) -> tuple[InferEstimate, str] | None:
    """The largest batch <= ``limit`` meeting the SLOs (bisection), and what stopped it growing
    (the failure of the next batch up, or ``reason`` when the limit itself passes)."""
    top = _estimate(walk, layout, limit)
    if not _fails(walk.goal, top):
        return top, reason
    low = _estimate(walk, layout, 1)
    if _fails(walk.goal, low):
        return None
    good, bad, failure = 1, limit, top  # invariant: good meets everything, bad does not
    while bad - good > 1:
        mid = (good + bad) // 2
        candidate = _estimate(walk, layout, mid)
        if _fails(walk.goal, candidate):
            bad, failure = mid, candidate
        else:
            good, low = mid, candidate
    return low, _fails(walk.goal, failure)


def _plan_layout(walk: _Walk, layout: InferenceLayout) -> None:
    q, space = walk.question, walk.space
    room = largest_batch(InferScenario(q.model, q.system, layout, q.input_len, q.output_len, None))
    batch = space.batch or 1
    if room < 1 or (walk.goal.objective is InferObjective.LATENCY and room < batch):
        walk.pruned_memory += 1
        return
    walk.costed += 1
    if walk.goal.objective is InferObjective.LATENCY or space.batch is not None:
        estimate = _estimate(walk, layout, batch)
        chosen = None if _fails(walk.goal, estimate) else (estimate, "fixed")
    else:
        limit, reason = room, "memory"
        if space.max_batch is not None and space.max_batch < room:
            limit, reason = space.max_batch, "max batch"
        chosen = _best_batch(walk, layout, limit, reason)
    if chosen is None:
        walk.pruned_slo += 1
        return
    walk.found.append(InferPlan(layout, chosen[0], chosen[1]))


def _score(objective: InferObjective, plan: InferPlan) -> tuple:
    e = plan.estimate
    if objective is InferObjective.LATENCY:
        return (e.e2e_latency_s, -e.output_tokens_per_s, layout_key(plan.layout))
    return (-e.output_tokens_per_s, e.e2e_latency_s, layout_key(plan.layout))


def _smallest(walk: _Walk, layouts: list[InferenceLayout]) -> tuple[float | None, InferenceLayout | None]:
    """Least memory per GPU over the layouts at batch 1 (only computed when nothing is feasible)."""
    sized = [(_estimate(walk, layout, 1).memory_per_gpu_bytes, layout_key(layout), layout) for layout in layouts]
    if not sized:
        return None, None
    memory, _, layout = min(sized)
    return memory, layout


def search_infer(
    question: InferQuestion,
    space: InferSpace | None = None,
    goal: InferGoal | None = None,
    on_progress: Progress | None = None,
) -> InferSearch:
    """Rank the inference layouts of ``question``; keep ``goal.top``. Raises ``FabricsimError`` when
    the constraints leave no valid layout; when none fits or meets the SLOs, the result is empty."""
    space, goal = space or InferSpace(), goal or InferGoal()
    layouts = infer_layouts(question, space)
    if not layouts:
        raise FabricsimError(
            "layout",
            f"no (tp, pp, ep) satisfies the constraints on {question.gpus} GPUs for {question.model.name}",
            "relax --tp/--pp/--ep or change --gpus",
        )
    check_cap("plan infer layouts", len(layouts), "SEARCH_LAYOUTS")  # a guard on the search's work
    walk = _Walk(question, goal, space)
    for index, layout in enumerate(layouts):
        _plan_layout(walk, layout)
        if on_progress is not None:
            on_progress(index + 1, len(layouts))
    ranked = sorted(walk.found, key=lambda plan: _score(goal.objective, plan))[: goal.top]
    smallest = _smallest(walk, layouts) if not walk.found else (None, None)
    return InferSearch(
        plans=_explain(ranked, goal.objective, question.output_len),
        evaluated=len(layouts),
        feasible=len(walk.found),
        costed=walk.costed,
        pruned_memory=walk.pruned_memory,
        pruned_slo=walk.pruned_slo,
        smallest_memory_bytes=smallest[0],
        smallest_memory_layout=smallest[1],
        estimates=walk.estimates,
    )


def _contributions(estimate: InferEstimate, output_len: int) -> dict[str, float]:
    """Seconds of the end-to-end latency by part: prefill parts + (output - 1) x decode parts."""
    out = {f"prefill {k.removesuffix('_s')}": v for k, v in _parts(estimate.prefill).items()}
    out |= {f"decode {k.removesuffix('_s')}": (output_len - 1) * v for k, v in _parts(estimate.decode).items()}
    return out


def _parts(parts: object) -> dict[str, float]:
    return {name: getattr(parts, name) for name in ("linear_s", "attention_s", "communication_s")}


def infer_reasons(best: InferPlan, other: InferPlan, objective: InferObjective, output_len: int) -> tuple[str, ...]:
    """Why ``other`` ranks below ``best``: throughput or latency gap, batch and its limit, the parts."""
    b, o = best.estimate, other.estimate
    reasons = [f"output tok/s {(o.output_tokens_per_s / b.output_tokens_per_s - 1) * 100:+.1f}%"]
    if objective is InferObjective.LATENCY:
        reasons = [f"latency {(o.e2e_latency_s / b.e2e_latency_s - 1) * 100:+.1f}%"]
    if o.batch != b.batch:
        reasons.append(f"batch {o.batch} vs {b.batch} (limit: {other.batch_limit})")
    if other.layout.replicas != best.layout.replicas:
        reasons.append(f"replicas {other.layout.replicas} vs {best.layout.replicas}")
    deltas = part_deltas(_contributions(b, output_len), _contributions(o, output_len), b.e2e_latency_s)
    reasons += [f"{name} {share * 100:+.1f}% of latency" for name, share in deltas[:1] if share >= MIN_SHARE]
    return tuple(reasons)


def _explain(ranked: list[InferPlan], objective: InferObjective, output_len: int) -> tuple[InferPlan, ...]:
    """The plans (best first) with the reasons each one loses to the first."""
    if not ranked:
        return ()
    best = ranked[0]
    rest = (replace(plan, reasons=infer_reasons(best, plan, objective, output_len)) for plan in ranked[1:])
    return (best, *rest)


def _dtype_list(flag: str, value: object) -> tuple[str, ...]:
    values = tuple(value) if isinstance(value, (list, tuple, set, frozenset)) else (value,)
    for v in values:
        check_dtype(str(v), flag)
    return tuple(d for d in INFERENCE_DTYPES if d in values)


def infer_space(constraints: dict[str, object]) -> InferSpace:
    """An :class:`InferSpace` from constraints keyed by short names: ``tp``, ``pp``, ``ep`` (one value
    or a list), ``dtype``, ``kv_dtype`` (names or lists), ``batch`` and ``max_batch`` (one integer each).
    The values were typed at the edge (:class:`fabricsim.specs.inputs.InferConstraints`); the dtypes
    are checked here, against the inference dtypes."""
    fields: dict[str, object] = {}
    for key, value in constraints.items():
        if value is None:
            continue
        if key in ("dtype", "kv_dtype"):
            fields[key] = _dtype_list(key.replace("_", "-"), value)
        elif key in ("batch", "max_batch"):
            fields[key] = value
        else:
            values = value if isinstance(value, (list, tuple, set, frozenset)) else (value,)
            fields[LONG_NAMES[key]] = tuple(sorted(set(values)))  # type: ignore[arg-type]
    return InferSpace(**fields)  # type: ignore[arg-type]
