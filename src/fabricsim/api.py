"""The public Python API (layer L9): the only place catalog names become specs.

Every function accepts catalog names or file paths, validates the inputs into specs, calls the
library, and returns an immutable result whose ``to_json()`` is the JSON contract of DESIGN.md.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim import catalog, collectives, planner, validation
from fabricsim import sweep as sweeps
from fabricsim.engine import analytic
from fabricsim.engine.flow_timer import flow_timers
from fabricsim.engine.simulate_training import TrainingCase, TrainingSimulation, simulate_training, step_breakdown
from fabricsim.engine.variability import Variability
from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.metrics import (
    CollectiveResult,
    InferResult,
    PlanEntry,
    PlanResult,
    SimulatedInferResult,
    SimulatedTrainResult,
    SweepSummary,
    TrafficResult,
    TrainResult,
)
from fabricsim.network.flow import FlowNetwork
from fabricsim.network.patterns import host_throughput_fraction, parse_pattern, pattern_flows
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.topology.parse import parse_topology
from fabricsim.topology.routing import parse_routing, route_table
from fabricsim.units import parse_size, to_GBps


def catalog_list(kind: str = "all") -> dict[str, list[str]]:
    """Names in the catalog, per kind."""
    if kind == "all":
        return {k: catalog.names(k) for k in catalog.KINDS}
    if kind not in catalog.KINDS:
        raise unknown_name("kind", kind, [*catalog.KINDS, "all"])
    return {kind: catalog.names(kind)}


def catalog_show(kind: str, name: str) -> dict[str, object]:
    """One catalog item as plain data, with the source of each number."""
    return catalog.describe(kind, name)


def collective(op: str, *, system: str, gpus: int, size: str | int, algorithm: str = "auto") -> CollectiveResult:
    """Estimate one collective on ``gpus`` GPUs of ``system``.

    ``size`` is S as nccl-tests defines it per op (e.g. the full gathered buffer for all-gather);
    algbw = S / time and busbw = algbw x the nccl-tests bus factor of the op.
    """
    spec = catalog.load_system(system)
    spec.check_gpu_count(gpus)
    operation = collectives.parse_op(op)
    algo = collectives.parse_algorithm(algorithm)
    size_bytes = parse_size(size, "size")
    if size_bytes == 0:
        raise FabricsimError("size", "must be at least 1 byte", "e.g. --size 1MiB")
    group = collectives.place_group(spec, gpus)
    est = collectives.estimate(operation, size_bytes, group, algo)
    algbw = size_bytes / est.time_s
    return CollectiveResult(
        op=operation.value,
        gpus=gpus,
        size_bytes=size_bytes,
        algorithm=est.algorithm.value,
        protocol=est.protocol,
        time_s=est.time_s,
        algbw_GBps=to_GBps(algbw),
        busbw_GBps=to_GBps(algbw * collectives.bus_factor(operation, gpus)),
    )


def train(
    model: str,
    system: str,
    gpus: int,
    global_batch: int,
    seq_len: int,
    *,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    cp: int | None = None,
    ep: int | None = None,
    vpp: int | None = None,
    micro_batch: int | None = None,
    zero: int | None = None,
    recompute: str | None = None,
    sequence_parallel: bool | None = None,
    dtype: str | None = None,
) -> TrainResult:
    """Estimate one training step of ``model`` on ``gpus`` GPUs of ``system`` (analytic fidelity).

    Unset layout fields get defaults (see ``fabricsim.workload.training.resolve_layout``: dp =
    gpus/(tp·pp·cp), micro-batch 1, no interleaving, ZeRO 1 for MoE else 0, no recomputation,
    sequence parallelism when tp > 1, bf16). Invalid layouts raise FabricsimError naming the field;
    a layout that does not fit is a result with ``fits`` False.
    """
    model_spec = catalog.load_model(model)
    system_spec = catalog.load_system(system)
    system_spec.check_gpu_count(gpus)
    for field, value in (("global-batch", global_batch), ("seq-len", seq_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise FabricsimError(field, f"must be a positive integer, got {value!r}")
    layout = analytic.resolve_layout(
        gpus,
        model_spec,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        data_parallel=dp,
        context_parallel=cp,
        expert_parallel=ep,
        virtual_stages=vpp,
        micro_batch_size=micro_batch,
        zero_stage=zero,
        recompute=recompute,
        sequence_parallel=sequence_parallel,
        dtype=dtype,
    )
    estimate = analytic.estimate_training(model_spec, system_spec, layout, global_batch, seq_len)
    return _train_result(model_spec.name, system_spec.name, estimate)


def _train_result(model: str, system: str, estimate: analytic.TrainingEstimate) -> TrainResult:
    """The ``train`` JSON contract of one analytic estimate."""
    return TrainResult(
        model=model,
        system=system,
        gpus=estimate.gpus,
        global_batch=estimate.global_batch,
        seq_len=estimate.seq_len,
        microbatches=estimate.microbatches,
        step_time_s=estimate.step_time_s,
        tokens_per_s=estimate.tokens_per_s,
        model_tflops_per_gpu=estimate.model_flops_per_gpu_s / 1e12,
        hardware_tflops_per_gpu=estimate.hardware_flops_per_gpu_s / 1e12,
        mfu=estimate.mfu,
        hfu=estimate.hfu,
        fits=estimate.fits,
        memory_per_gpu_bytes=estimate.memory_per_gpu_bytes,
        memory_capacity_bytes=estimate.memory_capacity_bytes,
        memory_breakdown_bytes=tuple(estimate.memory.as_dict().items()),
        time_breakdown_s=tuple(estimate.time.as_dict().items()),
        layout=tuple(estimate.layout.as_dict().items()),
    )


def validate(suite: str = "all") -> dict[str, object]:
    """Run published-measurement suites; JSON ``{suites: [{name, entries, mean_abs_error}]}``."""
    return {"suites": [result.to_json() for result in validation.run_suites(suite)]}


def sweep_runners() -> dict[sweeps.TaskKind, Callable[..., Any]]:
    """The ONE registry of sweep task kinds: kind -> the public function a task of that kind calls.

    Sweep (L8) cannot import this module (L9), so :func:`sweep` injects this registry. A task's
    parameters are the function's keyword arguments (its signature is the spec schema). Adding a
    kind is one line here.
    """
    return {
        sweeps.TaskKind.COLLECTIVE: collective,
        sweeps.TaskKind.TRAIN: train,
        sweeps.TaskKind.INFER: infer,
        sweeps.TaskKind.SERVE: serve,
    }


def sweep(
    spec: str | Path,
    *,
    db: str | Path | None = None,
    executor: str = "local",
    address: str | None = None,
    workers: int | None = None,
    export: str | Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> SweepSummary:
    """Run every task of the YAML sweep ``spec`` not yet in the SQLite store ``db``; export if asked.

    ``db`` defaults to ``<spec name>.sqlite`` in the current folder; ``executor`` is ``local`` (a
    process pool of ``workers`` processes, default: all CPUs) or ``ray`` (join ``address`` or start a
    local Ray). ``export`` writes the spec's rows to ``.csv`` or ``.parquet``. ``on_progress(completed,
    total)`` is called as tasks finish. Re-running a killed sweep completes it; each task is stored once.
    """
    runners = sweep_runners()
    tasks = sweeps.expand(sweeps.load_spec(spec), runners)
    options = sweeps.SweepOptions(
        db_path=Path(db) if db is not None else Path(Path(spec).stem + ".sqlite"),
        executor=sweeps.parse_executor(executor),
        workers=sweeps.default_workers() if workers is None else workers,
        address=address,
        export_path=None if export is None else Path(export),
    )
    return sweeps.run_sweep(tasks, runners, options, on_progress)


FIDELITIES = ("analytic", "simulate", "flow")


def _layout_from_json(layout: dict[str, object]) -> ParallelLayout:
    """The inverse of ``ParallelLayout.as_dict`` (short CLI names back to the spec)."""
    return ParallelLayout(
        tensor_parallel=int(layout["tp"]),  # type: ignore[arg-type]
        pipeline_parallel=int(layout["pp"]),  # type: ignore[arg-type]
        data_parallel=int(layout["dp"]),  # type: ignore[arg-type]
        context_parallel=int(layout["cp"]),  # type: ignore[arg-type]
        expert_parallel=int(layout["ep"]),  # type: ignore[arg-type]
        virtual_stages=int(layout["vpp"]),  # type: ignore[arg-type]
        micro_batch_size=int(layout["micro_batch"]),  # type: ignore[arg-type]
        zero_stage=int(layout["zero"]),  # type: ignore[arg-type]
        recompute=Recompute(layout["recompute"]),
        sequence_parallel=bool(layout["sequence_parallel"]),
        dtype=str(layout["dtype"]),
    )


def simulate_train(
    model: str,
    system: str,
    gpus: int,
    global_batch: int,
    seq_len: int,
    *,
    fidelity: str = "simulate",
    variability: Variability | None = None,
    **layout: Any,
) -> SimulatedTrainResult:
    """One training step through the event-driven engine; same inputs as :func:`train`.

    ``fidelity`` is ``simulate`` (collectives timed by the analytic collective model on an
    uncontended fabric) or ``flow`` (timed by the flow-level network model on the system's
    topology, every group of a kind communicating at once, ECMP routing). ``variability`` adds
    seeded stragglers, jitter and ECMP re-hashing and gives P50/P99 step times.
    ``layout`` takes :func:`train`'s keywords (tp, pp, dp, ...).
    """
    if fidelity not in ("simulate", "flow"):
        raise unknown_name("fidelity", fidelity, ("simulate", "flow"))
    if variability is not None:
        variability.validate()
    base = train(model, system, gpus, global_batch, seq_len, **layout)
    case = TrainingCase(
        catalog.load_model(model),
        catalog.load_system(system),
        _layout_from_json(dict(base.layout)),
        global_batch,
        seq_len,
    )
    rehash = variability is not None and variability.ecmp_rehash
    if rehash and fidelity != "flow":
        raise FabricsimError("ecmp", "ECMP re-hashing needs the flow network", "add --fidelity flow")
    seed = variability.seed if variability is not None else 0
    timers = flow_timers(case.system, gpus, rehash, seed) if fidelity == "flow" else (lambda run: None)
    sim = simulate_training(case, timers, variability)
    return _simulated_result(base, sim, fidelity)


def _simulated_result(base: TrainResult, sim: TrainingSimulation, fidelity: str) -> SimulatedTrainResult:
    ratio = sim.estimate.step_time_s / sim.step_time_s
    train_result = dataclasses.replace(
        base,
        step_time_s=sim.step_time_s,
        tokens_per_s=base.tokens_per_s * ratio,
        model_tflops_per_gpu=base.model_tflops_per_gpu * ratio,
        hardware_tflops_per_gpu=base.hardware_tflops_per_gpu * ratio,
        mfu=base.mfu * ratio,
        hfu=base.hfu * ratio,
        time_breakdown_s=tuple(step_breakdown(sim).items()),
        fidelity=fidelity,
    )
    tail = sim.tail
    return SimulatedTrainResult(
        train=train_result,
        analytic_step_time_s=sim.estimate.step_time_s,
        step_time_s_p50=tail.p50_s if tail is not None else None,
        step_time_s_p99=tail.p99_s if tail is not None else None,
        seeds=len(tail.samples_s) if tail is not None else 0,
        exposed_comm_s=tuple(sim.result.comm.exposed_s.items()),
        comm_busy_s=tuple(sim.result.comm.busy_s.items()),
        folded=tuple(sim.result.folded.items()),
        simulated_ops=sim.result.ops,
        simulation=sim,
    )


def plan_train(
    model: str,
    system: str,
    gpus: int,
    global_batch: int,
    seq_len: int,
    *,
    top: int = 5,
    objective: str = "tokens-per-s",
    refine: int = 0,
    constraints: dict[str, object] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> PlanResult:
    """Search the training layouts of ``model`` on ``gpus`` GPUs of ``system``; the ``top`` best.

    ``objective``: ``tokens-per-s`` (same ranking as ``step-time`` at a fixed batch) or ``memory``.
    ``constraints`` limits dimensions with :func:`train`'s layout keywords, each one value or a
    list (``{"tp": [4, 8], "recompute": "full"}``); unset dimensions take every valid value.
    ``refine`` re-times the first K plans with the event-driven engine (fidelity ``simulate``).
    Constraints that leave no valid layout raise FabricsimError; when nothing fits in memory the
    result has no plans and the smallest memory need. ``on_progress(done, total)`` reports progress.
    """
    model_spec, system_spec = catalog.load_model(model), catalog.load_system(system)
    system_spec.check_gpu_count(gpus)
    for field, value in (("global-batch", global_batch), ("seq-len", seq_len), ("top", top)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise FabricsimError(field, f"must be a positive integer, got {value!r}")
    if isinstance(refine, bool) or not isinstance(refine, int) or refine < 0:
        raise FabricsimError("refine", f"must be 0 or a positive integer, got {refine!r}")
    goal = planner.parse_train_objective(objective)
    space = planner.train_space(constraints or {})
    question = planner.TrainQuestion(model_spec, system_spec, gpus, global_batch, seq_len)
    start = time.perf_counter()
    search = planner.search_train(question, space, planner.PlanSettings(top, goal), on_progress)
    search = planner.refine_search(question, search, refine, goal)
    return _train_plan_result(question, search, goal, time.perf_counter() - start)


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
        plans=tuple(_plan_entry(rank, *names, plan) for rank, plan in enumerate(search.plans, 1)),
        smallest_memory_per_gpu_bytes=search.smallest_memory_bytes if smallest else None,
        smallest_memory_layout=tuple(smallest.as_dict().items()) if smallest else None,
        refined=sum(plan.simulation is not None for plan in search.plans),
        extra=_faster_unfit_json(search.faster_unfit),
    )


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


def _plan_entry(rank: int, model: str, system: str, plan: planner.TrainPlan) -> PlanEntry:
    result: TrainResult | SimulatedTrainResult = _train_result(model, system, plan.estimate)
    if plan.simulation is not None:
        result = _simulated_result(result, plan.simulation, "simulate")
    return PlanEntry(rank, result, plan.reasons)


def _inference_specs(model: str, system: str, layout_request: Any) -> tuple[Any, Any, Any]:
    """Catalog names -> (ModelSpec, SystemSpec, InferenceLayout) for ``infer`` and ``serve``."""
    from fabricsim.workload import inference as inference_workload

    model_spec = catalog.load_model(model)
    system_spec = catalog.load_system(system)
    layout = inference_workload.resolve_layout(model_spec, system_spec, layout_request)
    return model_spec, system_spec, layout


def infer(
    model: str,
    system: str,
    gpus: int,
    *,
    batch: int | str = "max",
    input_len: int,
    output_len: int,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    kv_spill: str | None = None,
    kv_spill_capacity: str | int | None = None,
) -> Any:
    """Static-batch inference estimate (analytic): TTFT, TPOT, end-to-end latency, throughput, memory.

    ``batch`` is sequences per model replica, or ``"max"`` for the largest whose KV fits. A model or
    batch that does not fit is a result with ``fits`` False. ``kv_spill`` names a catalog link
    (``pcie-gen5`` for host memory, ``cxl2``/``cxl3`` for a CXL pool) holding the KV that HBM cannot,
    up to ``kv_spill_capacity`` per GPU. Returns :class:`metrics.InferResult`.
    """
    from fabricsim.engine.inference import InferScenario, KvSpill, infer_estimate
    from fabricsim.workload.inference import LayoutRequest, check_lengths

    request = LayoutRequest(gpus, tp, pp, ep, dtype, kv_dtype)
    model_spec, system_spec, layout = _inference_specs(model, system, request)
    _positive_int("input-len", input_len)
    _positive_int("output-len", output_len)
    check_lengths(model_spec, input_len, output_len)
    size = None if str(batch) == "max" else _positive_int("batch", batch)
    spill = None
    if kv_spill:
        link = catalog.load_link(kv_spill)
        spill = KvSpill(link.name, link.bandwidth_Bps, link.latency_s)
        if kv_spill_capacity is not None:
            capacity = float(parse_size(kv_spill_capacity, "kv-spill-capacity"))
            spill = dataclasses.replace(spill, capacity_bytes=capacity)
    scenario = InferScenario(model_spec, system_spec, layout, input_len, output_len, size, spill=spill)
    est = infer_estimate(scenario)
    return _infer_result((model_spec.name, system_spec.name), gpus, layout, est)


def _infer_result(names: tuple[str, str], gpus: int, layout: Any, est: Any) -> InferResult:
    """The ``infer`` JSON contract of one estimate; ``names`` = (model, system)."""
    breakdown = {"prefill_" + k: v for k, v in dataclasses.asdict(est.prefill).items()}
    breakdown.update({"decode_" + k: v for k, v in dataclasses.asdict(est.decode).items()})
    return InferResult(
        model=names[0], system=names[1], gpus=gpus, ttft_s=est.ttft_s, tpot_s=est.tpot_s,
        e2e_latency_s=est.e2e_latency_s, batch=est.batch, output_tokens_per_s=est.output_tokens_per_s,
        kv_cache_bytes=est.kv_cache_bytes, memory_per_gpu_bytes=est.memory_per_gpu_bytes,
        memory_capacity_bytes=est.memory_capacity_bytes, fits=est.fits,
        layout=tuple(layout.as_dict().items()), time_breakdown_s=tuple(breakdown.items()),
        kv_spilled_bytes=est.kv_spilled_bytes,
    )


def _positive_int(field: str, value: object) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise FabricsimError(field, f"must be a positive integer, got {value!r}") from None
    if number < 1:
        raise FabricsimError(field, f"must be a positive integer, got {value!r}")
    return number


def _parse_disaggregate(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    try:
        prefill, decode = (int(part) for part in str(text).split(":"))
    except ValueError:
        raise FabricsimError("disaggregate", f"cannot parse {text!r}", "use P:D, e.g. 1:3") from None
    if prefill < 1 or decode < 1:
        raise FabricsimError("disaggregate", f"both pools need a replica, got {text!r}", "use P:D, e.g. 1:3")
    return prefill, decode


def _request_stream(model_spec: Any, options: dict[str, Any]) -> Any:
    """Poisson arrivals with sampled lengths, or a trace file (CSV or JSONL)."""
    from fabricsim.workload import requests as request_streams
    from fabricsim.workload.inference import check_lengths

    context = model_spec.max_position_embeddings
    if options.get("trace"):
        path = Path(str(options["trace"]))
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise FabricsimError("trace", f"cannot read {path}: {exc.strerror}", "check the path") from None
        stream = request_streams.parse_trace(text, jsonl=path.suffix.lower() in (".jsonl", ".json", ".ndjson"))
        check_lengths(model_spec, int(stream.input_len.max()), int(stream.output_len.max()))
        return stream
    rate = options.get("arrival_rate")
    if rate is None or not (float(rate) > 0):
        raise FabricsimError("arrival-rate", f"must be a positive number, got {rate!r}", "or give --trace FILE")
    dists = (request_streams.parse_length_dist(options["input_len"], "input-len"),
             request_streams.parse_length_dist(options["output_len"], "output-len"))
    if max(dists[0].upper_bound, dists[1].upper_bound) < float("inf"):
        check_lengths(model_spec, dists[0].upper_bound, dists[1].upper_bound)
    count = _positive_int("requests", options["requests"])
    stream = request_streams.poisson_stream(float(rate), count, dists, (context - 1, context - 1), int(options["seed"]))
    return request_streams.clip_to_context(stream, context)


def serve(
    model: str,
    system: str,
    gpus: int,
    *,
    arrival_rate: float | None = None,
    trace: str | None = None,
    requests: int = 1000,
    input_len: str = "1024",
    output_len: str = "256",
    seed: int = 0,
    disaggregate: str | None = None,
    tp: int | None = None,
    pp: int | None = None,
    ep: int | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    token_budget: int = 8192,
    max_batch: int = 1024,
    slo_ttft_s: float = 2.0,
    slo_tpot_s: float = 0.1,
    admission: str = "on-demand",
) -> Any:
    """Simulate serving a request stream (Poisson or trace) with continuous batching; see
    :mod:`fabricsim.workload.serving`. ``gpus`` is the whole deployment; each replica gets the
    layout; ``disaggregate="P:D"`` splits the replicas into P prefill and D decode replicas.
    ``admission`` is ``on-demand`` (vLLM: KV blocks as needed, preempt the newest on overflow) or
    ``reserve`` (TensorRT-LLM GUARANTEED_NO_EVICT: KV for input + output reserved at admission).
    Returns :class:`metrics.ServeResult`."""
    from fabricsim.engine.serving import ServeScenario, replica_kv_tokens, simulate_serving
    from fabricsim.metrics import ServeResult
    from fabricsim.workload.inference import LayoutRequest

    model_spec, system_spec, layout = _inference_specs(model, system, LayoutRequest(gpus, tp, pp, ep, dtype, kv_dtype))
    split = _parse_disaggregate(disaggregate)
    if split and sum(split) != layout.replicas:
        raise FabricsimError("disaggregate", f"{split[0]}:{split[1]} needs {sum(split)} replicas of "
                             f"{layout.replica_gpus} GPUs, {gpus} GPUs make {layout.replicas}", "match --gpus")
    if admission not in ("on-demand", "reserve"):
        raise FabricsimError("admission", f"unknown policy {admission!r}", "use on-demand or reserve")
    scenario = ServeScenario(model_spec, system_spec, layout, _positive_int("token-budget", token_budget),
                             _positive_int("max-batch", max_batch), reserve_full=admission == "reserve",
                             disaggregate=split)
    stream = _request_stream(model_spec, {"trace": trace, "arrival_rate": arrival_rate, "input_len": input_len,
                                          "output_len": output_len, "requests": requests, "seed": seed})
    longest = int((stream.input_len + stream.output_len).max())
    if replica_kv_tokens(scenario) < longest:
        raise FabricsimError("model", f"a replica's KV cache holds {replica_kv_tokens(scenario)} tokens, less than "
                             f"the longest request ({longest})", "use more GPUs per replica, FP8 or shorter requests")
    summary = simulate_serving(scenario, stream, (slo_ttft_s, slo_tpot_s))
    return ServeResult(
        model=model_spec.name, system=system_spec.name, gpus=gpus, requests=summary.requests,
        completed=summary.completed, output_tokens_per_s=summary.output_tokens_per_s,
        requests_per_s=summary.requests_per_s, ttft_s=tuple(summary.ttft.to_json().items()),
        tpot_s=tuple(summary.tpot.to_json().items()), e2e_s=tuple(summary.e2e.to_json().items()),
        slo_attainment=summary.slo_attainment, slo=(("ttft_s", slo_ttft_s), ("tpot_s", slo_tpot_s)),
        arrival_rate_per_s=None if trace else float(arrival_rate or 0.0), seed=seed,
        preemptions=summary.preemptions, steps=summary.steps, duration_s=summary.duration_s,
        layout=tuple({**layout.as_dict(), "disaggregate": disaggregate or None}.items()),
    )


def simulate_infer(
    model: str,
    system: str,
    gpus: int,
    *,
    input_len: int,
    output_len: int,
    variability: Variability | None = None,
    **options: Any,
) -> SimulatedInferResult:
    """One static inference batch through the event-driven engine (fidelity ``simulate``).

    Same inputs as :func:`infer` (``options``: batch, tp, pp, ep, dtype, kv_dtype). The decode
    steps run as an op graph with the analytic step costs; ``variability`` (stragglers, jitter)
    gives per-token P50/P99 TPOT. The ``flow`` network is not used for inference: its collectives
    are small and latency-bound, where the flow model's bandwidth view says little.
    """
    from fabricsim.engine.inference import InferScenario
    from fabricsim.engine.simulate_inference import simulate_decode
    from fabricsim.workload.inference import LayoutRequest

    base = infer(model, system, gpus, input_len=input_len, output_len=output_len, **options)
    if variability is not None:
        variability.validate()
        if variability.ecmp_rehash:
            raise FabricsimError("ecmp", "ECMP re-hashing needs the flow network, which infer does not use")
    get = options.get
    request = LayoutRequest(gpus, get("tp"), get("pp"), get("ep"), get("dtype"), get("kv_dtype"))
    model_spec, system_spec, layout = _inference_specs(model, system, request)
    scenario = InferScenario(model_spec, system_spec, layout, input_len, output_len, base.batch)
    sim = simulate_decode(scenario, variability)
    infer_result = dataclasses.replace(base, tpot_s=sim.tpot_s, fidelity="simulate")
    return SimulatedInferResult(
        infer=infer_result,
        analytic_tpot_s=sim.estimate.tpot_s,
        tpot_s_p50=sim.tpot_s_p50,
        tpot_s_p99=sim.tpot_s_p99,
        seeds=variability.seeds if sim.tpot_s_p50 is not None and variability is not None else 0,
        tokens_sampled=sim.tokens_sampled,
        folded=tuple(sim.graph.folded.items()),
        simulated_ops=sim.ops,
        simulation=sim,
    )


def traffic(
    pattern: str,
    *,
    topology: str,
    routing: str = "ecmp",
    seed: int = 0,
    size: str | int = "64MiB",
    hosts: int | None = None,
) -> TrafficResult:
    """Run a synthetic traffic ``pattern`` (permutation | all-to-all | incast | ring) on ``topology``
    (builder string or catalog system) with the max-min flow model; every flow carries ``size``
    bytes and starts at t = 0. ``hosts`` uses only the first hosts (default: all)."""
    kind = parse_pattern(pattern)
    policy = parse_routing(routing)
    size_bytes = parse_size(size, "size")
    topo = parse_topology(topology)
    count = topo.hosts if hosts is None else hosts
    if count > topo.hosts:
        problem = f"pattern needs {count} hosts, {topology} has {topo.hosts}"
        raise FabricsimError("hosts", problem, f"use --hosts <= {topo.hosts}")
    flows = pattern_flows(kind, count, float(size_bytes), seed)
    result = FlowNetwork(route_table(topo), policy, seed).run(flows)
    fraction = host_throughput_fraction(flows, result.finish_s, topo.line_rate_Bps)
    return TrafficResult(
        pattern=kind.value,
        topology=topology,
        routing=policy.value,
        seed=seed,
        hosts=count,
        flows=flows.count,
        size_bytes=size_bytes,
        throughput_mean=float(fraction.mean()),
        throughput_p1=float(np.percentile(fraction, 1)),
        throughput_min=float(fraction.min()),
        completion_time_s=result.completion_time_s,
        max_link_utilization=float(result.peak_utilization.max(initial=0.0)),
        events=result.events,
    )


def plan_infer(
    model: str,
    system: str,
    gpus: int,
    input_len: int,
    output_len: int,
    *,
    top: int = 5,
    objective: str = "throughput",
    slo_s: tuple[float | None, float | None] = (None, None),
    constraints: dict[str, object] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    serving: dict[str, object] | None = None,
) -> PlanResult:
    """Search inference layouts and batch sizes of ``model`` on ``gpus`` GPUs of ``system``.

    ``objective``: ``throughput`` (most output tokens/s whose TPOT and TTFT meet ``slo_s`` =
    (TPOT SLO, TTFT SLO) in seconds, either None) or ``latency`` (least end-to-end latency at the
    batch in ``constraints``, default 1). ``constraints``: ``tp``, ``pp``, ``ep`` (value or list),
    ``dtype``, ``kv_dtype`` (name or list), ``batch``, ``max_batch``. Plans follow the ``infer`` contract
    plus ``batch_limit`` (what stopped the batch growing: memory, max batch, TPOT SLO, TTFT SLO).
    ``serving`` (``{"arrival_rate": R, "requests": N, "seed": S}``) also serves a Poisson stream on
    each plan's layout, aggregated and split into prefill:decode replicas, and ranks those
    deployments by SLO attainment then output tokens/s (JSON key ``serving``).
    """
    from fabricsim.workload.inference import check_lengths

    model_spec, system_spec = catalog.load_model(model), catalog.load_system(system)
    system_spec.check_gpu_count(gpus)
    check_lengths(model_spec, _positive_int("input-len", input_len), _positive_int("output-len", output_len))
    goal = planner.InferGoal(planner.parse_infer_objective(objective), slo_s[0], slo_s[1], _positive_int("top", top))
    planner.check_goal(goal)
    question = planner.InferQuestion(model_spec, system_spec, gpus, input_len, output_len)
    space = planner.infer_space(constraints or {})
    start = time.perf_counter()
    search = planner.search_infer(question, space, goal, on_progress)
    extra = () if serving is None else (("serving", _serving_splits(question, search, goal, serving)),)
    result = _infer_plan_result(question, search, goal, time.perf_counter() - start)
    return dataclasses.replace(result, extra=extra)


def _serving_splits(
    question: planner.InferQuestion, search: planner.InferSearch, goal: planner.InferGoal, serving: dict[str, object]
) -> dict[str, object]:
    """The serving deployments (aggregated, P:D splits) of the plans' layouts, best first (JSON)."""
    options = {"requests": 500, "seed": 0, **serving, "trace": None}
    options |= {"input_len": str(question.input_len), "output_len": str(question.output_len)}
    stream = _request_stream(question.model, options)
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
        pruned=(("memory", search.pruned_memory), ("slo", search.pruned_slo)),
        elapsed_s=elapsed_s,
        plans=tuple(
            PlanEntry(rank, _infer_result(names, question.gpus, p.layout, p.estimate), p.reasons,
                      (("batch_limit", p.batch_limit),))
            for rank, p in enumerate(search.plans, 1)
        ),
        smallest_memory_per_gpu_bytes=search.smallest_memory_bytes,
        smallest_memory_layout=tuple(smallest.as_dict().items()) if smallest else None,
    )
