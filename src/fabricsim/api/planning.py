"""Layout search for training and serving (public API, layer L9)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fabricsim import catalog, planner
from fabricsim.api.cost import attach_infer, attach_train
from fabricsim.api.inference import infer_result, request_stream
from fabricsim.api.training import SETTINGS, a2a_overlap_unavailable, train_result, training_options
from fabricsim.engine.inference.step import check_lengths
from fabricsim.engine.training import analytic
from fabricsim.errors import FabricsimError
from fabricsim.metrics import (
    PlanEntry,
    PlanResult,
    SimulatedTrainResult,
    TrainResult,
)
from fabricsim.specs import SystemSpec
from fabricsim.specs.inputs import (
    Batch,
    Depth,
    Duration,
    Fidelity,
    Gpus,
    InferConstraints,
    PositiveFloat,
    Refine,
    ServingLoad,
    Tokens,
    Top,
    TrainConstraints,
    edge,
)
from fabricsim.specs.memory_tier import OffloadSpec
from fabricsim.transformer.flops import model_dims
from fabricsim.transformer.parameters import check_cluster_can_hold
from fabricsim.workload.pipeline_layout import check_layout_content

if TYPE_CHECKING:
    from fabricsim.api.fabric import FabricOptions


@edge
def plan_train(
    model: str,
    system: str,
    gpus: Gpus,
    global_batch: Batch,
    seq_len: Tokens,
    *,
    top: Top = 5,
    objective: str = "tokens-per-s",
    refine: Refine = 0,
    constraints: TrainConstraints | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    flash_attention: bool | None = None,
    overlap_grad_reduce: bool | None = None,
    overlap_param_gather: bool | None = None,
    tp_comm_overlap: bool | None = None,
    a2a_overlap: bool | None = None,
    fp8_recipe: str | None = None,
    capacity_factor: PositiveFloat | None = None,
    moe_dispatcher: str | None = None,
    cross_entropy: str | None = None,
    mtp_layers: Depth | None = None,
    account_for_embedding_in_pipeline_split: bool | None = None,
    account_for_loss_in_pipeline_split: bool | None = None,
    grad_reduce_in_fp32: bool | None = None,
    pipeline_layout: str | None = None,
    recompute_modules: str | list[str] | None = None,
    lora_rank: Depth | None = None,
    search_offload: bool | None = None,
    offload_tier: str | list[str] | None = None,
    topology: str | None = None,
    placement: str | None = None,
    nic: str | None = None,
    background: str | None = None,
) -> PlanResult:
    """Search the training layouts of ``model`` on ``gpus`` GPUs of ``system``; the ``top`` best.

    The framework settings are :func:`train`'s (``flash_attention`` ... ``recompute_modules``; a
    pipeline layout fixes pp x vpp, recompute modules apply to the selective layouts). An overlap
    left unset is free to choose, and the planner chooses it on: in this model each overlap only
    subtracts hidden time (exposed = max(0, comm - compute) <= comm) and costs no memory, so "on" is
    never worse for any layout (``tests/planner`` checks it) and searching "off" could not change
    the ranking. Plans report the settings they ran with.

    ``search_offload`` (default: on when the system lists a memory tier) also tries keeping the
    optimizer, weights and/or activations on a memory tier (``offload_tier``: one name or a list,
    default every tier of the system) for layouts that do not fit in HBM by themselves.

    ``objective``: ``tokens-per-s`` (same ranking as ``step-time`` at a fixed batch) or ``memory``.
    ``constraints`` limits dimensions with :func:`train`'s layout keywords, each one value or a
    list (``{"tp": [4, 8], "recompute": "full"}``); unset dimensions take every valid value.
    ``refine`` re-times the first K plans with the event-driven engine (fidelity ``simulate``); with
    ``topology``, ``placement``, ``nic`` or ``background`` (:mod:`fabricsim.api.fabric`) it re-times
    them at flow fidelity on that fabric, every collective with what else is in flight.
    ``topology="ocs-torus:auto"`` on an OCS system (tpu-v5p, tpu7x): the job runs on its own slice
    of whole 4x4x4 cubes; the layouts are searched on the default (most cube-like, regular) slice
    and each plan gets the slice shape and twist its collectives run fastest on
    (:mod:`fabricsim.planner.slice`; ``slice`` per plan, ``slice_search`` in the result).
    Constraints that leave no valid layout raise FabricsimError; when nothing fits in memory the
    result has no plans and the smallest memory need. ``on_progress(done, total)`` reports progress.
    """
    settings = {name: value for name, value in locals().items() if name in SETTINGS}  # first: the arguments
    model_spec, system_spec = catalog.load_model(model), catalog.load_system(system)
    system_spec.check_gpu_count(gpus)
    auto_slice, shapes = planner.is_slice_auto(topology), []
    if auto_slice:  # the job's own OCS slice: searched on the default shape, each plan's slice chosen after
        shapes = planner.check_slice_chips(gpus, planner.ocs_pod(system_spec), system_spec.name)
        system_spec, topology = planner.slice_system(system_spec, planner.default_shape(shapes).dims), None
    fabric = None
    if any(value is not None for value in (topology, placement, nic, background)):
        # the fabric (and the network simulator behind it) is imported only when a plan asks for one
        from fabricsim.api.fabric import FabricOptions, job_system, with_nic

        fabric = _refine_fabric(system_spec, gpus, refine, FabricOptions(topology, placement, nic, background))
        system_spec = job_system(with_nic(system_spec, nic), gpus, topology)  # an explicit OCS slice: its system
    check_cluster_can_hold(model_spec, system_spec)
    goal = planner.parse_train_objective(objective)
    space = planner.train_space(constraints.model_dump() if constraints is not None else {})
    options = training_options(**settings, free=True)
    if options.pipeline_layout:  # its content does not depend on the layout searched
        layers = model_dims(model_spec).layers
        check_layout_content(options.pipeline_accounting.chunks, layers, options.mtp_layers)
    question = planner.TrainQuestion(model_spec, system_spec, gpus, global_batch, seq_len, options)
    choices = _offload_choices(system_spec, search_offload, offload_tier)
    start = time.perf_counter()
    search = planner.search_train(question, space, planner.PlanSettings(top, goal, choices), on_progress)
    search = planner.refine_search(question, search, refine, goal, fabric)
    result = _train_plan_result(question, search, goal, time.perf_counter() - start)
    return _with_slices(result, question, search, shapes) if auto_slice else result


def _with_slices(
    result: PlanResult, question: planner.TrainQuestion, search: planner.TrainSearch, shapes: list[Any]
) -> PlanResult:
    """``result`` with each plan's OCS slice (``slice``: shape, twist, collectives per step, the
    runner-up and the default shape; :mod:`fabricsim.planner.slice`) and the search's ``slice_search``."""
    from fabricsim.engine.training.simulate import TrainingCase

    entries = []
    for entry, plan in zip(result.plans, search.plans, strict=True):
        options = question.options if question.options is not None else analytic.TrainingOptions()
        case = TrainingCase(question.model, question.system, plan.estimate.layout, question.global_batch,
                            question.seq_len, options)  # fmt: skip
        pick = planner.choose_slice(case, question.system, shapes)
        entries.append(dataclasses.replace(entry, extra=(*entry.extra, ("slice", pick.as_json()))))
    default = planner.default_shape(shapes)
    search_json = {
        "default_dims": "x".join(map(str, default.dims)),
        "candidates": len(shapes),
        "basis": "plans ranked on the default slice (the most cube-like, regular); each plan's slice and twist "
        "chosen by its collectives' time per step on every candidate (fabricsim.planner.slice)",
    }
    return dataclasses.replace(result, plans=tuple(entries), extra=(*result.extra, ("slice_search", search_json)))


def _refine_fabric(system: SystemSpec, gpus: int, refine: int, options: FabricOptions) -> Any:
    """The fabric the refined plans run on (flow fidelity), or None when no fabric option is given;
    the options need ``--refine`` (the analytic search does not see the fabric)."""
    from fabricsim.api.fabric import FABRIC_KEYS, seat, with_nic

    if not options.given:
        return None
    if refine == 0:
        given = next(k for k in FABRIC_KEYS if getattr(options, k) is not None)
        raise FabricsimError(given, "re-times the refined plans on the fabric", "add --refine K")
    return seat(with_nic(system, options.nic), gpus, Fidelity.FLOW, options, None)[1]


def _offload_choices(
    system: SystemSpec, search_offload: bool | None, offload_tier: str | list[str] | None
) -> tuple[OffloadSpec, ...]:
    """The offload choices to search: none when ``search_offload`` is False, else every class set
    on the allowed tiers (an error when asked for explicitly on a system without any tier)."""
    if search_offload is not None and not isinstance(search_offload, bool):
        raise FabricsimError("search-offload", f"must be true or false, got {search_offload!r}")
    tiers = None if offload_tier is None else tuple(str_items(offload_tier))
    if search_offload is False:
        if tiers is not None:
            raise FabricsimError("offload-tier", "given with --no-search-offload", "drop one of them")
        return ()
    choices = planner.offload_choices(system, tiers)
    planner.check_offload_choices(choices, bool(search_offload) or tiers is not None)
    return choices


def str_items(value: str | list[str]) -> list[str]:
    """``"host,cxl"`` or ``["host", "cxl"]`` -> ``["host", "cxl"]``."""
    parts = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    items = [part.strip() for part in parts if part.strip()]
    if not items:
        raise FabricsimError("offload-tier", "is empty", "name host, grace or cxl")
    return items


def _train_plan_result(
    question: planner.TrainQuestion, search: planner.TrainSearch, goal: planner.TrainObjective, elapsed_s: float
) -> PlanResult:
    names = (question.model.name, question.system.name)
    smallest = search.smallest_memory_layout
    return PlanResult(
        kind="train",
        model=names[0],
        system=names[1],
        gpus=question.gpus,
        objective=goal.value,
        evaluated=search.evaluated,
        feasible=search.feasible,
        costed=search.costed,
        pruned=(
            ("memory", search.pruned_memory),
            ("memory_larger_micro_batch", search.pruned_unsized),
            ("time_bound", search.pruned_time),
        ),
        elapsed_s=elapsed_s,
        plans=tuple(
            _plan_entry(rank, names[0], question.system, plan, question.options)
            for rank, plan in enumerate(search.plans, 1)
        ),
        smallest_memory_per_gpu_bytes=search.smallest_memory_bytes if smallest else None,
        smallest_memory_layout=tuple(smallest.as_dict().items()) if smallest else None,
        refined=sum(plan.simulation is not None for plan in search.plans),
        extra=_faster_unfit_json(search.faster_unfit) + _offload_unsized_json(search),
    )


def _offload_unsized_json(search: planner.TrainSearch) -> tuple[tuple[str, object], ...]:
    """``offload_unsized`` (offload search only): layouts of time-pruned blocks that do not fit by
    themselves and whose offload choices were not sized; ``feasible`` counts the layouts found to
    fit among those sized (:class:`fabricsim.planner.TrainSearch`)."""
    return (("offload_unsized", search.offload_unsized),) if search.searched_offload else ()


def _faster_unfit_json(estimate: analytic.TrainingEstimate | None) -> tuple[tuple[str, object], ...]:
    """``faster_but_unfit``: a layout faster than plan 1 that does not fit (what memory costs)."""
    if estimate is None:
        return ()
    return (
        (
            "faster_but_unfit",
            {
                "layout": estimate.layout.as_dict(),
                "step_time_s": estimate.step_time_s,
                "memory_per_gpu_bytes": estimate.memory_per_gpu_bytes,
                "memory_capacity_bytes": estimate.memory_capacity_bytes,
            },
        ),
    )


def _plan_entry(
    rank: int, model: str, system: SystemSpec, plan: planner.TrainPlan, options: analytic.TrainingOptions | None
) -> PlanEntry:
    if options is not None and a2a_overlap_unavailable(options, plan.estimate.layout):
        options = dataclasses.replace(options, a2a_overlap=False)  # what the layout ran with
    result: TrainResult | SimulatedTrainResult = attach_train(
        train_result(model, system.name, plan.estimate, options), system
    )
    if plan.simulation is not None:  # refined: the simulated result (its module imports the fabric simulator)
        from fabricsim.api.training_simulated import simulated_train_result

        result = simulated_train_result(result, plan.simulation, "simulate")
    return PlanEntry(rank, result, plan.reasons)


@edge
def plan_infer(
    model: str,
    system: str,
    gpus: Gpus,
    input_len: Tokens,
    output_len: Tokens,
    *,
    top: Top = 5,
    objective: str = "throughput",
    slo_tpot_s: Duration | None = None,
    slo_ttft_s: Duration | None = None,
    constraints: InferConstraints | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    serving: ServingLoad | None = None,
    topology: str | None = None,
) -> PlanResult:
    """Search inference layouts and batch sizes of ``model`` on ``gpus`` GPUs of ``system``.

    ``objective``: ``throughput`` (most output tokens/s whose TPOT and TTFT meet ``slo_tpot_s`` and
    ``slo_ttft_s``, durations in seconds or with a unit such as ``"25ms"``, either None) or ``latency``
    (least end-to-end latency at the batch in ``constraints``, default 1). ``constraints``: ``tp``, ``pp``,
    ``ep`` (value or list), ``dtype``, ``kv_dtype`` (name or list), ``batch``, ``max_batch``. Plans follow
    the ``infer`` contract
    plus ``batch_limit`` (what stopped the batch growing: memory, max batch, TPOT SLO, TTFT SLO).
    ``serving`` (``{"arrival_rate": R, "requests": N, "seed": S}``) also serves a Poisson stream on
    each plan's layout, aggregated and split into prefill:decode replicas, and ranks those
    deployments by SLO attainment then output tokens/s (JSON key ``serving``).

    ``topology`` (an OCS system: tpu-v5p, tpu7x): ``ocs-torus:auto`` searches the layouts on the
    default (most cube-like, regular) slice of ``gpus`` chips and gives each plan the slice shape and
    twist on which one batch of its requests' collectives (TP all-reduces and EP all-to-alls of
    every prefill and decode step, PP sends) take least time (:mod:`fabricsim.planner.slice`;
    ``slice`` per plan, ``slice_search`` in the result); ``ocs-torus:AxBxC[,twisted=1]`` searches on
    that slice (the analytic search sees its regular torus) and gives each plan its collectives'
    time on it, twist included. Any other topology, or a slice on another system, is refused.
    """
    model_spec, system_spec = catalog.load_model(model), catalog.load_system(system)
    system_spec.check_gpu_count(gpus)
    system_spec, shapes, default = _infer_slice(system_spec, gpus, topology)
    check_cluster_can_hold(model_spec, system_spec)
    check_lengths(model_spec, input_len, output_len)
    goal = planner.InferGoal(planner.parse_infer_objective(objective), slo_tpot_s, slo_ttft_s, top)
    question = planner.InferQuestion(model_spec, system_spec, gpus, input_len, output_len)
    space = planner.infer_space(constraints.model_dump() if constraints is not None else {})
    start = time.perf_counter()
    search = planner.search_infer(question, space, goal, on_progress)
    served = serving is not None and serving.arrival_rate is not None
    extra = (("serving", _serving_splits(question, search, goal, serving)),) if served else ()
    result = _infer_plan_result(question, search, goal, time.perf_counter() - start)
    result = dataclasses.replace(result, extra=result.extra + extra)
    return _with_infer_slices(result, question, search, shapes, default) if shapes else result


def _infer_slice(system: SystemSpec, gpus: int, topology: str | None) -> tuple[SystemSpec, list[Any], Any]:
    """The system ``plan infer`` searches on, the candidate OCS slices and the default one (none
    without ``topology``): ``ocs-torus:auto``, every slice of ``gpus`` chips of the system's pod and
    the most cube-like; ``ocs-torus:AxBxC[,twisted=1]``, that slice alone. One-line errors: another
    topology (plan infer has no fabric to re-time on), or an OCS slice on a system without one."""
    from fabricsim.planner import slice as slices

    if topology is None:
        return system, [], None
    if planner.is_slice_auto(topology):
        shapes = planner.check_slice_chips(gpus, planner.ocs_pod(system), system.name)
        default = planner.default_shape(shapes)
        return planner.slice_system(system, default.dims), shapes, default
    shape = slices.requested_shape(topology)
    if shape is None:
        problem = f"plan infer runs on an OCS slice only, not {topology.strip()[:60]!r}"
        raise FabricsimError("topology", problem, "use ocs-torus:auto or ocs-torus:4x4x8[,twisted=1] on tpu-v5p/tpu7x")
    from fabricsim.api.fabric import job_system

    return job_system(system, gpus, topology), [shape], shape


def _with_infer_slices(
    result: PlanResult, question: planner.InferQuestion, search: planner.InferSearch, shapes: list[Any], default: Any
) -> PlanResult:
    """``result`` with each plan's OCS slice (``slice``: the shape and twist on which one batch of its
    requests' collectives take least time, the runner-up and the default; :mod:`fabricsim.planner.slice`)
    and the search's ``slice_search``."""
    from fabricsim.engine.inference.analytic import InferScenario
    from fabricsim.planner import slice as slices

    q, entries = question, []
    for entry, plan in zip(result.plans, search.plans, strict=True):
        scenario = InferScenario(q.model, q.system, plan.layout, q.input_len, q.output_len, plan.estimate.batch)
        pick = slices.pick_slice(slices.infer_collectives(scenario), q.system, shapes, default)
        entries.append(dataclasses.replace(entry, extra=(*entry.extra, ("slice", pick.as_json()))))
    search_json = {
        "default_dims": "x".join(map(str, default.dims)) + (",twisted=1" if default.twisted else ""),
        "candidates": len(shapes),
        "basis": "plans ranked on the default slice (the most cube-like, regular; or the slice asked for); each "
        "plan's slice and twist chosen by its collectives' time for one batch of its requests (every prefill "
        "chunk and decode step: TP all-reduces, EP all-to-alls, PP sends) on every candidate (fabricsim.planner.slice)",
    }
    return dataclasses.replace(result, plans=tuple(entries), extra=(*result.extra, ("slice_search", search_json)))


def _serving_splits(
    question: planner.InferQuestion, search: planner.InferSearch, goal: planner.InferGoal, serving: ServingLoad
) -> dict[str, object]:
    """The serving deployments (aggregated, P:D splits) of the plans' layouts, best first (JSON)."""
    options: dict[str, object] = {**serving.model_dump(), "trace": None}
    options |= {"input_len": str(question.input_len), "output_len": str(question.output_len)}
    stream = request_stream(question.model, options)
    default_ttft, default_tpot = planner.DEFAULT_SLO_S
    slo_s = (goal.ttft_slo_s or default_ttft, goal.tpot_slo_s or default_tpot)
    split = planner.SplitQuestion(question.model, question.system, stream, slo_s)
    deployments, skipped = planner.search_splits(split, [plan.layout for plan in search.plans])
    return {
        "arrival_rate_per_s": float(options["arrival_rate"]),  # type: ignore[arg-type]
        "requests": int(options["requests"]),  # type: ignore[call-overload]
        "seed": int(options["seed"]),  # type: ignore[call-overload]
        "slo": {"ttft_s": slo_s[0], "tpot_s": slo_s[1]},
        "simulated": len(deployments),
        "skipped_layouts": skipped,
        "deployments": [_deployment_json(rank, d) for rank, d in enumerate(deployments[: goal.top], 1)],
    }


def _deployment_json(rank: int, deployment: planner.SplitPlan) -> dict[str, object]:
    split, summary = deployment.disaggregate, deployment.summary
    return {
        "rank": rank,
        "layout": {**deployment.layout.as_dict(), "disaggregate": f"{split[0]}:{split[1]}" if split else None},
        "slo_attainment": summary.slo_attainment,
        "output_tokens_per_s": summary.output_tokens_per_s,
        "requests_per_s": summary.requests_per_s,
        "ttft_s": summary.ttft.to_json(),
        "tpot_s": summary.tpot.to_json(),
        "e2e_s": summary.e2e.to_json(),
    }


def _infer_plan_result(
    question: planner.InferQuestion, search: planner.InferSearch, goal: planner.InferGoal, elapsed_s: float
) -> PlanResult:
    names = (question.model.name, question.system.name)
    smallest = search.smallest_memory_layout
    return PlanResult(
        kind="infer",
        model=names[0],
        system=names[1],
        gpus=question.gpus,
        objective=goal.objective.value,
        evaluated=search.evaluated,
        feasible=search.feasible,
        costed=search.costed,
        pruned=(("memory", search.pruned_memory),),  # before costing; the SLO rejects after it
        extra=(("rejected_slo", search.pruned_slo), ("estimates", search.estimates)),
        elapsed_s=elapsed_s,
        plans=tuple(
            PlanEntry(rank, attach_infer(infer_result(names, question.gpus, p.layout, p.estimate), question.system),
                      p.reasons, (("batch_limit", p.batch_limit),))
            for rank, p in enumerate(search.plans, 1)
        ),
        smallest_memory_per_gpu_bytes=search.smallest_memory_bytes,
        smallest_memory_layout=tuple(smallest.as_dict().items()) if smallest else None,
    )
