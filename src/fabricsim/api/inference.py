"""Inference batches and serving under load (public API, layer L9)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricsim import catalog
from fabricsim.api.cost import attach_infer, attach_serve
from fabricsim.cost.energy import retime_infer_energy
from fabricsim.engine.inference.analytic import InferEstimate, InferScenario, KvSpill, infer_estimate
from fabricsim.engine.inference.scheduler import Policy, Router, percentiles
from fabricsim.engine.inference.serving import (
    PoolFit,
    ServeScenario,
    ServingFeatures,
    pool_fits,
    serving_network,
    simulate_serving,
)
from fabricsim.engine.inference.simulate import simulate_inference
from fabricsim.engine.inference.step import InferenceLayout, LayoutRequest, check_lengths, resolve_layout
from fabricsim.engine.simulate import comm_summary
from fabricsim.engine.variability import Variability
from fabricsim.errors import FabricsimError
from fabricsim.metrics import (
    InferResult,
    ServeResult,
    SimulatedInferResult,
)
from fabricsim.specs import ModelSpec, SystemSpec
from fabricsim.specs.inputs import (
    Batch,
    BatchOrMax,
    Choice,
    Count,
    Degree,
    Duration,
    Fidelity,
    FidelityChoice,
    Fraction,
    Gpus,
    NonNegativeFloat,
    PositiveFloat,
    Probability,
    Requests,
    Seed,
    SimFidelity,
    Tokens,
    edge,
)
from fabricsim.specs.memory_tier import KvPoolSpec
from fabricsim.textfile import read_text
from fabricsim.transformer.parameters import check_cluster_can_hold
from fabricsim.units import parse_size
from fabricsim.workload import requests as request_streams
from fabricsim.workload.requests import RequestStream

if TYPE_CHECKING:
    from fabricsim.engine.inference.serving_fabric import ServingFabric
PolicyChoice = Choice(Policy)
RouterChoice = Choice(Router)
DraftTokens = Count("DRAFT_TOKENS")


def inference_specs(
    model: str, system: str, layout_request: LayoutRequest
) -> tuple[ModelSpec, SystemSpec, InferenceLayout]:
    """Catalog names -> (ModelSpec, SystemSpec, InferenceLayout) for ``infer`` and ``serve``."""
    model_spec = catalog.load_model(model)
    system_spec = catalog.load_system(system)
    check_cluster_can_hold(model_spec, system_spec)
    layout = resolve_layout(model_spec, system_spec, layout_request)
    return model_spec, system_spec, layout


@edge
def infer(
    model: str,
    system: str,
    gpus: Gpus,
    *,
    batch: BatchOrMax = "max",
    input_len: Tokens,
    output_len: Tokens,
    tp: Degree | None = None,
    pp: Degree | None = None,
    ep: Degree | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    kv_spill: str | None = None,
    kv_spill_capacity: str | int | None = None,
    cuda_graphs: bool = True,
) -> InferResult:
    """Static-batch inference estimate (analytic): TTFT, TPOT, end-to-end latency, throughput, memory.

    ``batch`` is sequences per model replica, or ``"max"`` for the largest whose KV fits. A model or
    batch that does not fit is a result with ``fits`` False. ``kv_spill`` names a catalog link
    (``pcie-gen5`` for host memory, ``cxl2``/``cxl3`` for a CXL pool) holding the KV that HBM cannot,
    up to ``kv_spill_capacity`` per GPU. ``cuda_graphs``: decode steps replay CUDA graphs (the
    engines' default) or launch every kernel. Returns :class:`metrics.InferResult`.
    """
    request = LayoutRequest(gpus, tp, pp, ep, dtype, kv_dtype)
    model_spec, system_spec, layout = inference_specs(model, system, request)
    check_lengths(model_spec, input_len, output_len)
    size = None if batch == "max" else int(batch)
    spill = None
    if kv_spill:
        link = catalog.load_link(kv_spill)
        spill = KvSpill(link.name, link.bandwidth_Bps, link.latency_s)
        if kv_spill_capacity is not None:
            capacity = float(parse_size(kv_spill_capacity, "kv-spill-capacity"))
            spill = dataclasses.replace(spill, capacity_bytes=capacity)
    scenario = InferScenario(model_spec, system_spec, layout, input_len, output_len, size, spill=spill,
                             cuda_graphs=cuda_graphs)
    est = infer_estimate(scenario)
    return attach_infer(infer_result((model_spec.name, system_spec.name), gpus, layout, est), system_spec)


def infer_result(names: tuple[str, str], gpus: int, layout: InferenceLayout, est: InferEstimate) -> InferResult:
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


def _parse_disaggregate(text: str | None) -> tuple[int, int] | None:
    if text is None:  # "" is refused below, not read as "aggregated"
        return None
    try:
        prefill, decode = (int(part) for part in str(text).split(":"))
    except ValueError:
        raise FabricsimError("disaggregate", f"cannot parse {text!r}", "use P:D, e.g. 1:3") from None
    if prefill < 1 or decode < 1:
        raise FabricsimError("disaggregate", f"both pools need a replica, got {text!r}", "use P:D, e.g. 1:3")
    return prefill, decode


def request_stream(model_spec: ModelSpec, options: dict[str, Any]) -> RequestStream:
    """Poisson (or ``arrival="gamma:CV"``) arrivals with sampled lengths, or a trace file (CSV or JSONL)."""
    context = model_spec.max_position_embeddings
    arrival = request_streams.parse_arrival(options.get("arrival", "poisson"))
    if options.get("trace"):
        if arrival.kind != "poisson":
            raise FabricsimError("arrival", "a request trace replays its own arrival times",
                                 "drop --arrival, or drop --request-trace")
        path = Path(str(options["trace"]))
        text = read_text(path, "request-trace")
        stream = request_streams.parse_trace(text, jsonl=path.suffix.lower() in (".jsonl", ".json", ".ndjson"))
        check_lengths(model_spec, int(stream.input_len.max()), int(stream.output_len.max()))
        return stream
    rate = options.get("arrival_rate")
    if rate is None:
        raise FabricsimError("arrival-rate", "is required without a request trace", "or give --request-trace FILE")
    dists = (request_streams.parse_length_dist(options["input_len"], "input-len"),
             request_streams.parse_length_dist(options["output_len"], "output-len"))
    if max(dists[0].upper_bound, dists[1].upper_bound) < float("inf"):
        check_lengths(model_spec, dists[0].upper_bound, dists[1].upper_bound)
    count = int(options["requests"])  # type: ignore[call-overload]
    request_streams.check_arrival_rate(float(rate), count)
    stream = request_streams.poisson_stream(float(rate), count, dists, (context - 1, context - 1), int(options["seed"]),
                                            arrival)
    return request_streams.clip_to_context(stream, context)


@edge
def serve(
    model: str,
    system: str,
    gpus: Gpus,
    *,
    arrival_rate: PositiveFloat | None = None,
    request_trace: str | None = None,
    requests: Requests = 1000,
    input_len: str = "1024",
    output_len: str = "256",
    seed: Seed = 0,
    disaggregate: str | None = None,
    tp: Degree | None = None,
    pp: Degree | None = None,
    ep: Degree | None = None,
    dtype: str | None = None,
    kv_dtype: str | None = None,
    token_budget: Tokens = 8192,
    max_batch: Batch = 1024,
    slo_ttft_s: Duration = 2.0,
    slo_tpot_s: Duration = 0.1,
    admission: str = "on-demand",
    fidelity: FidelityChoice = Fidelity.SIMULATE,
    topology: str | None = None,
    placement: str | None = None,
    nic: str | None = None,
    background: str | None = None,
    transport: str | None = None,
    ber: str | None = None,
    cc_params: tuple[str, ...] | None = None,
    link_jitter: NonNegativeFloat = 0.0,
    arrival: str = "poisson",
    kv_pool: str | None = None,
    pool_sharing: Gpus | None = None,
    scheduler: PolicyChoice = Policy.CHUNKED,
    router: RouterChoice = Router.LEAST_WORK,
    shared_prefix: Fraction = 0.0,
    speculative: DraftTokens | None = None,
    acceptance: Probability | None = None,
    cuda_graphs: bool = True,
) -> ServeResult:
    """Simulate serving a request stream (Poisson or trace) with continuous batching; see
    :mod:`fabricsim.engine.inference.scheduler`. ``gpus`` is the whole deployment; each replica gets the
    layout; ``disaggregate="P:D"`` splits the replicas into P prefill and D decode replicas.
    ``admission`` is ``on-demand`` (vLLM: KV blocks as needed, preempt the newest on overflow) or
    ``reserve`` (TensorRT-LLM GUARANTEED_NO_EVICT: KV for input + output reserved at admission).
    ``arrival`` is ``poisson`` or ``gamma:CV`` (bursty gaps for CV > 1; see :mod:`fabricsim.workload.requests`).
    ``scheduler`` (chunked | orca | static), ``router`` (least-work | round-robin | random, seeded by
    ``seed``), ``shared_prefix`` (fraction of each prompt cached once per replica) and
    ``speculative`` K draft tokens at ``acceptance`` A: :mod:`fabricsim.engine.inference.scheduler`.
    ``cuda_graphs``: decode steps replay CUDA graphs (the engines' default) or launch every kernel.
    A deployment whose replica KV cache (per pool) cannot hold the longest request, weights that do
    not fit included, is a result with ``fits`` False, its memory figures and nothing served.
    ``fidelity``: ``analytic``/``simulate`` time steps and KV hand-offs by the analytic model;
    ``flow``/``packet`` run the collectives that leave an NVLink domain and the hand-offs on the
    placed fabric (``topology``, ``placement``, ``nic``, ``background``, ``transport``, ``ber``, ``cc_params`` as for
    ``train``; see :mod:`fabricsim.engine.inference.serving_fabric`). ``link_jitter`` (sigma) stretches each step's
    communication and each hand-off by ``1 + sigma |Z|`` at every fidelity.
    ``kv_pool`` names a shared CXL pool (catalog ``pools`` or a YAML file) that preempted requests'
    KV goes to and comes back from (:mod:`fabricsim.engine.inference.kv_pool`), shared by
    ``pool_sharing`` GPUs (default: the pool's hosts x the system's GPUs per node).
    Returns :class:`metrics.ServeResult`."""
    from fabricsim.api.fabric import FabricOptions, check_fabric_options, job_system, with_nic

    choices = FabricOptions(topology, placement, nic, background, transport, ber, cc_params)
    check_fabric_options(choices, fidelity, None)
    model_spec, system_spec, layout = inference_specs(model, system, LayoutRequest(gpus, tp, pp, ep, dtype, kv_dtype))
    system_spec = job_system(with_nic(system_spec, nic), gpus, topology)  # an OCS slice: its torus
    split = _parse_disaggregate(disaggregate)
    if split and sum(split) != layout.replicas:
        raise FabricsimError("disaggregate", f"{split[0]}:{split[1]} needs {sum(split)} replicas of "
                             f"{layout.replica_gpus} GPUs, {gpus} GPUs make {layout.replicas}", "match --gpus")
    if admission not in ("on-demand", "reserve"):
        raise FabricsimError("admission", f"unknown policy {admission!r}", "use on-demand or reserve")
    pool, sharing = _kv_pool_choice(kv_pool, pool_sharing, system_spec, layout.replicas * layout.replica_gpus)
    features = ServingFeatures(scheduler, shared_prefix, _speculative(speculative, acceptance), router, seed)
    scenario = ServeScenario(model_spec, system_spec, layout, token_budget, max_batch,
                             reserve_full=admission == "reserve", disaggregate=split, kv_pool=pool,
                             pool_sharing_gpus=sharing, features=features, cuda_graphs=cuda_graphs)
    stream = request_stream(model_spec, {"trace": request_trace, "arrival_rate": arrival_rate, "input_len": input_len,
                                          "output_len": output_len, "requests": requests, "seed": seed,
                                          "arrival": arrival})
    fits = pool_fits(scenario, stream)
    common = {
        "model": model_spec.name, "system": system_spec.name, "gpus": gpus, "requests": len(stream),
        "slo": (("ttft_s", slo_ttft_s), ("tpot_s", slo_tpot_s)), "seed": seed,
        "arrival_rate_per_s": None if request_trace else float(arrival_rate or 0.0),
        "arrival": None if request_trace else str(request_streams.parse_arrival(arrival)),
        "layout": tuple({**layout.as_dict(), "disaggregate": disaggregate or None}.items()), **_fit_fields(fits),
    }
    if not common["fits"]:
        return ServeResult(**common, **_UNFIT_OUTCOME)
    network, placed = _serving_network(scenario, fidelity, choices, link_jitter, seed)
    summary = simulate_serving(scenario, stream, (slo_ttft_s, slo_tpot_s), network)
    extra: dict[str, Any] = {"tpot_p99_over_p50": summary.tpot.p99 / summary.tpot.p50 if summary.tpot.p50 > 0 else
                             float("nan")}
    if network is not None:
        from fabricsim.api.fabric import serving_network_report
        from fabricsim.engine.inference.serving_fabric import percentile_pair

        record = network.record
        if split:
            extra["kv_transfer_s"] = tuple(percentiles(np.asarray(record.transfer_s)).to_json().items())
        extra["network_stall_s"] = tuple(percentile_pair(record.stall_s).items())
        if placed is not None:
            extra["network"] = serving_network_report(placed, network.network_runs)
    return attach_serve(ServeResult(
        **common, completed=summary.completed, output_tokens_per_s=summary.output_tokens_per_s,
        requests_per_s=summary.requests_per_s, ttft_s=tuple(summary.ttft.to_json().items()),
        tpot_s=tuple(summary.tpot.to_json().items()), e2e_s=tuple(summary.e2e.to_json().items()),
        slo_attainment=summary.slo_attainment, preemptions=summary.preemptions, steps=summary.steps,
        duration_s=summary.duration_s, fidelity=fidelity.value, kv_pool=_kv_pool_block(pool, sharing, summary.kv_pool),
        prefix_hit_rate=summary.prefix_hit_rate, prefill_tokens_computed=summary.prefill_tokens_computed,
        tokens_per_step=summary.tokens_per_step, **extra,
    ), system_spec)


def _serving_network(
    scenario: ServeScenario, fidelity: Fidelity, choices: Any, link_jitter: float, seed: int
) -> tuple[ServingFabric | None, Any]:
    """The serving network (None when the analytic step and hand-off times stand unchanged) and the
    placed fabric (None below flow fidelity)."""
    if not (fidelity.on_fabric or link_jitter or scenario.disaggregate):
        return None, None
    fabrics = host_of_gpu = placed = None
    if fidelity.on_fabric:
        from fabricsim.api.fabric import background_samples, build_fabric
        from fabricsim.engine.inference.serving_fabric import BACKGROUND_SAMPLES

        gpus = scenario.layout.replicas * scenario.layout.replica_gpus
        placed = build_fabric(scenario.system, gpus, fidelity.value, choices, seed)
        fabrics, host_of_gpu = background_samples(placed, scenario.system, seed, BACKGROUND_SAMPLES), placed.host_of_gpu
    return serving_network(scenario, fabrics, host_of_gpu, link_jitter, seed), placed


def _kv_pool_choice(
    name: str | None, sharing: int | None, system: SystemSpec, gpus: int
) -> tuple[KvPoolSpec | None, int]:
    """(the pool, the GPUs sharing it) from ``--kv-pool`` and ``--pool-sharing``; (None, 0) without
    a pool. Every GPU of the deployment (``gpus``) reaches the pool, so fewer sharers are refused."""
    if name is None:
        if sharing is not None:
            raise FabricsimError("pool-sharing", "given without --kv-pool", "add --kv-pool NAME, e.g. cxl-pool-cmm-b")
        return None, 0
    pool = catalog.load_pool(name, "kv-pool")
    if sharing is None:
        sharing = pool.hosts * system.gpus_per_node
        if sharing < gpus:
            raise FabricsimError("pool-sharing", f"{pool.name} serves {pool.hosts} hosts ({sharing} GPUs of "
                                 f"{system.name}), fewer than the deployment's {gpus} GPUs",
                                 f"give --pool-sharing {gpus} or more")
    elif sharing < gpus:
        raise FabricsimError("pool-sharing", f"{sharing} is fewer than the deployment's {gpus} GPUs, which all "
                             "reach the pool", f"give --pool-sharing {gpus} or more")
    return pool, sharing


def _kv_pool_block(
    pool: KvPoolSpec | None, sharing: int, report: dict[str, float] | None
) -> tuple[tuple[str, object], ...]:
    """ServeResult's ``kv_pool`` pairs (empty, so null, without a pool)."""
    if pool is None or report is None:
        return ()
    return (("name", pool.name), ("sharing_gpus", sharing), *report.items())


def _speculative(draft_tokens: int | None, acceptance: float | None) -> tuple[int, float] | None:
    """(K, A) of speculative decoding; the two options come together."""
    if draft_tokens is None and acceptance is None:
        return None
    if draft_tokens is None:
        raise FabricsimError("acceptance", "applies to speculative decoding only", "add --speculative K")
    if acceptance is None:
        raise FabricsimError("speculative", "needs the draft acceptance rate", "add --acceptance A, e.g. 0.7")
    return draft_tokens, acceptance


_NO_PERCENTILES = (("p50", float("nan")), ("p90", float("nan")), ("p99", float("nan")))
_UNFIT_OUTCOME: dict[str, Any] = {
    "completed": 0, "output_tokens_per_s": 0.0, "requests_per_s": 0.0, "ttft_s": _NO_PERCENTILES,
    "tpot_s": _NO_PERCENTILES, "e2e_s": _NO_PERCENTILES, "slo_attainment": 0.0, "preemptions": 0, "steps": 0,
    "duration_s": 0.0,
}
"""What a deployment that cannot hold its longest request serves: nothing (null percentiles in JSON)."""


def _fit_fields(fits: tuple[PoolFit, ...]) -> dict[str, Any]:
    """ServeResult's memory keys: all pools fit; the most loaded pool's memory and longest request."""
    worst = max(fits, key=lambda pool: (pool.memory_per_gpu_bytes, pool.longest_request_tokens))
    return {
        "fits": all(pool.fits for pool in fits), "memory_per_gpu_bytes": worst.memory_per_gpu_bytes,
        "memory_capacity_bytes": worst.memory_capacity_bytes, "kv_capacity_tokens": worst.kv_capacity_tokens,
        "longest_request_tokens": max(pool.longest_request_tokens for pool in fits),
        "pools": tuple((pool.role, pool.to_json()) for pool in fits) if len(fits) > 1 else (),
    }


@edge
def simulate_infer(
    model: str,
    system: str,
    gpus: Gpus,
    *,
    input_len: Tokens,
    output_len: Tokens,
    fidelity: SimFidelity = Fidelity.SIMULATE,
    variability: Variability | None = None,
    topology: str | None = None,
    placement: str | None = None,
    nic: str | None = None,
    background: str | None = None,
    transport: str | None = None,
    ber: str | None = None,
    cc_params: tuple[str, ...] | None = None,
    **options: Any,
) -> SimulatedInferResult:
    """One static inference batch through the event-driven engine.

    Same inputs as :func:`infer` (``options``: batch, tp, pp, ep, dtype, kv_dtype). The prefill
    chunks and decode steps run as an op graph with the analytic step costs (TTFT and TPOT from the
    graph; the end-to-end latency and throughput follow from them). ``fidelity`` is ``simulate``
    (collectives at their analytic, uncontended times), ``flow`` or ``packet`` (the TP/EP/PP
    payloads of a model replica run on the placed fabric together, never below the analytic time;
    :mod:`fabricsim.engine.fabric_loop`). ``topology``, ``placement``, ``nic`` and ``background``
    choose the fabric, ``transport``, ``ber`` and ``cc_params`` its packet transport (:mod:`fabricsim.api.fabric`).
    ``variability`` (stragglers, jitter; ECMP re-hashing with ``flow``) gives P50/P99 TTFT over runs
    and TPOT over tokens.
    """
    from fabricsim.api.fabric import FabricOptions, check_fabric_options, job_system, network_report, seat, with_nic

    choices = FabricOptions(topology, placement, nic, background, transport, ber, cc_params)
    check_fabric_options(choices, fidelity, variability)
    base = infer(model, system, gpus, input_len=input_len, output_len=output_len, **options)
    get = options.get
    request = LayoutRequest(gpus, get("tp"), get("pp"), get("ep"), get("dtype"), get("kv_dtype"))
    model_spec, system_spec, layout = inference_specs(model, system, request)
    system_spec = job_system(with_nic(system_spec, choices.nic), gpus, choices.topology)  # an OCS slice: its torus
    scenario = InferScenario(model_spec, system_spec, layout, input_len, output_len, base.batch,
                             cuda_graphs=bool(get("cuda_graphs", True)))
    placed = on_fabric = None
    if fidelity.on_fabric:
        placed, on_fabric = seat(system_spec, gpus, fidelity, choices, variability)
    sim = simulate_inference(scenario, variability, None, on_fabric)
    network = None
    if placed is not None and sim.job is not None and sim.fabric_run is not None:
        exposed = comm_summary(sim.graph, sim.timeline).exposed_s
        network = network_report(placed, sim.job, sim.fabric_run, exposed)
    e2e = sim.ttft_s + (output_len - 1) * sim.tpot_s
    infer_result = retime_infer_energy(dataclasses.replace(
        base, ttft_s=sim.ttft_s, tpot_s=sim.tpot_s, e2e_latency_s=e2e,
        output_tokens_per_s=layout.replicas * base.batch * output_len / e2e if e2e > 0 else 0.0,
        fidelity=fidelity.value,
    ))
    varied = sim.tpot_s_p50 is not None and variability is not None
    return SimulatedInferResult(
        infer=infer_result,
        analytic_tpot_s=sim.estimate.tpot_s,
        tpot_s_p50=sim.tpot_s_p50,
        tpot_s_p99=sim.tpot_s_p99,
        seeds=variability.seeds if varied and variability is not None else 0,
        tokens_sampled=sim.tokens_sampled,
        folded=tuple(sim.graph.folded.items()),
        simulated_ops=sim.ops,
        simulation=sim,
        analytic_ttft_s=sim.estimate.ttft_s,
        ttft_s_p50=sim.ttft_s_p50,
        ttft_s_p99=sim.ttft_s_p99,
        network=network,
    )
