"""Simulated static-batch inference: TTFT and TPOT from an op graph, P50/P99 under variability (layer L6).

The costs are the analytic inference engine's (:func:`fabricsim.engine.inference.infer_estimate`:
the prefill chunk of :func:`~fabricsim.engine.inference.prefill_chunks` and the mean decode step;
:class:`fabricsim.workload.inference.CommunicationModel` for the collectives and pipeline hand-off
of one micro-batch); :mod:`fabricsim.workload.inference_graph` lays them out as the prefill chunks
then ``DECODE_STEPS`` decode steps of ``pp`` micro-batches. TTFT is the time the batch's last
micro-batch leaves prefill; a token's TPOT is the time between consecutive completions of its
micro-batch at the last stage. Without variability and with ``pp = 1`` both equal the analytic ones;
with ``pp > 1`` the simulated prefill also pays the pipeline fill (``pp - 1`` stage passes), which the
analytic TTFT leaves out. With stragglers and jitter the per-run TTFT and the per-token intervals
over steps and seeds give P50/P99 (a token waits for the slowest GPU of every stage it crosses).

Network fidelity: by default the collectives keep their analytic (uncontended) times; a timer
factory may re-time them (a call takes ``max(1, timer / analytic call time)`` times its nominal time).
With the fabric in the loop (:mod:`fabricsim.engine.fabric_loop`) the TP/EP/PP payloads of one model
replica run as flows or packets on the placed fabric, each with whatever else is in flight; the
network leaves out the algorithms' per-step latencies, which dominate the KB-sized decode messages,
so contention can only add to the analytic time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fabricsim.engine.inference.analytic import InferEstimate, InferScenario, infer_estimate, prefill_chunks
from fabricsim.engine.inference.step import CommunicationModel
from fabricsim.engine.simulate import CommTimer, Timeline, execute
from fabricsim.engine.variability import TimerFactory, Variability, perturbed
from fabricsim.specs import SystemSpec
from fabricsim.workload.graph import CommPayload, OpGraph, Stream
from fabricsim.workload.inference_graph import (
    Collective,
    InferenceGraph,
    InferencePlan,
    StagePass,
    build_inference_graph,
)

if TYPE_CHECKING:
    from fabricsim.engine.fabric_loop import FabricJob, FabricRun, OnFabric

DECODE_STEPS = 32  # steps simulated per run: enough for P99 over steps x micro-batches x seeds
MAX_PREFILL_CHUNKS = 64  # more chunks are folded: each simulated chunk stands for several equal ones
LAYER_GROUPS = 4  # compute/collective alternations per stage pass (fewer if the stage has fewer layers)

_CATEGORY = {"all-reduce": ("tp-all-reduce", Stream.TP_COMM), "all-to-all": ("ep-all-to-all", Stream.EP_COMM)}


def _link_class(system: SystemSpec, ranks: int, stride: int) -> str:
    """``scale-out`` when ``ranks`` GPUs ``stride`` apart span more than one scale-up domain."""
    return "scale-out" if (ranks - 1) * stride >= system.scale_up.domain_gpus else "scale-up"


def _stage_pass(
    comm: CommunicationModel, tokens: float, compute_s: float, calls_s: dict[CommPayload, float]
) -> StagePass:
    """One micro-batch of ``tokens`` through a stage; records each payload's analytic call time."""
    collectives = []
    for call in comm.calls(tokens):
        category, stream = _CATEGORY[call.op.value]
        payload = CommPayload(call.op.value, int(call.size_bytes + 0.5), call.ranks, 1,
                              _link_class(comm.system, call.ranks, 1))
        calls_s[payload] = call.time_s
        collectives.append(Collective(category, stream, call.count * call.time_s, call.count, payload))
    p2p_s = comm.p2p_s(tokens)
    p2p_payload = None
    if p2p_s > 0:
        stride = comm.layout.stage_gpus
        p2p_payload = CommPayload("send-recv", int(comm.p2p_bytes(tokens) + 0.5), 2, stride,
                                  _link_class(comm.system, 2, stride))
        calls_s[p2p_payload] = p2p_s
    comm_s = sum(c.time_s for c in collectives) + p2p_s
    return StagePass(max(compute_s - comm_s, 0.0), tuple(collectives), p2p_s, p2p_payload)


@dataclass(frozen=True, slots=True)
class PlannedInference:
    """The plan, each payload's analytic time per call (s), and the prefill chunks per simulated one."""

    plan: InferencePlan
    call_s: dict[CommPayload, float]
    chunks_per_simulated: float


def inference_plan(scenario: InferScenario, estimate: InferEstimate, steps: int = DECODE_STEPS) -> PlannedInference:
    """Per micro-batch and stage costs of a prefill chunk and of the mean decode step of ``estimate``."""
    layout = scenario.layout
    p, batch = layout.pipeline_parallel, estimate.batch
    comm = CommunicationModel(scenario.system, layout, scenario.model)
    chunks = prefill_chunks(scenario, batch)
    simulated = min(chunks, MAX_PREFILL_CHUNKS)
    fold = chunks / simulated
    calls_s: dict[CommPayload, float] = {}
    prefill = _stage_pass(comm, batch * scenario.input_len / chunks / p, estimate.prefill.total_s / chunks / p, calls_s)
    if fold > 1:  # a simulated chunk is ``fold`` real ones back to back
        prefill = StagePass(prefill.compute_s * fold, tuple(
            Collective(c.category, c.stream, c.time_s * fold, c.calls * fold, c.payload) for c in prefill.collectives
        ), prefill.p2p_s * fold, prefill.p2p_payload)
    decode = _stage_pass(comm, batch / p, estimate.decode.total_s / p, calls_s)
    layers = max(1, math.ceil(scenario.model.num_hidden_layers / p))
    plan = InferencePlan(
        pipeline_parallel=p, prefill_chunks=simulated, prefill=prefill,
        decode_steps=steps if scenario.output_len > 1 else 0, decode=decode,
        stage_gpus=layout.stage_gpus, layers=layers, layer_groups=min(LAYER_GROUPS, layers),
    )
    return PlannedInference(plan, calls_s, fold)


def network_durations(built: InferenceGraph, call_s: dict[CommPayload, float], timer: CommTimer | None) -> np.ndarray:
    """Duration (s) of every op: nominal, or with ``timer`` each payload op's nominal time scaled by
    ``max(1, timer(payload) / analytic call time)`` (see the module docstring); one timing per payload."""
    ops = built.graph.ops
    out = np.array([op.duration_s for op in ops])
    if timer is None:
        return out
    factor: dict[CommPayload, float] = {}
    for i, op in enumerate(ops):
        if op.payload is None or op.payload not in call_s:
            continue
        if op.payload not in factor:
            nominal = call_s[op.payload]
            factor[op.payload] = max(1.0, float(timer(op.payload)) / nominal) if nominal > 0 else 1.0
        out[i] *= factor[op.payload]
    return out


@dataclass(frozen=True, slots=True)
class InferenceSimulation:
    """Simulated TTFT and TPOT (s): nominal, and percentiles with variability."""

    estimate: InferEstimate
    ttft_s: float
    tpot_s: float
    ttft_s_p50: float | None
    ttft_s_p99: float | None
    tpot_s_p50: float | None
    tpot_s_p99: float | None
    tokens_sampled: int
    graph: OpGraph
    timeline: Timeline
    fabric_run: FabricRun | None = None  # with the fabric in the loop: the mixes it timed
    job: FabricJob | None = None

    @property
    def ops(self) -> int:
        return len(self.graph.ops)


def _ttft(end_s: np.ndarray, built: InferenceGraph) -> float:
    done = [i for i in built.prefill_done if i >= 0]
    return float(end_s[done].max()) if done else 0.0


def _intervals(end_s: np.ndarray, token_done: list[list[int]]) -> np.ndarray:
    """Times between consecutive tokens of each micro-batch (the first step's latency excluded)."""
    done = end_s[np.array(token_done, dtype=int)]  # [micro-batch, step]
    return np.diff(done, axis=1).ravel()


def simulate_inference(
    scenario: InferScenario,
    variability: Variability | None = None,
    timers: TimerFactory | None = None,
    on_fabric: OnFabric | None = None,
) -> InferenceSimulation:
    """TTFT and TPOT of ``scenario`` from the event-driven engine; ``timers(None)`` times the
    payloads of the nominal run and ``timers(run)`` those of Monte-Carlo run ``run`` (None or a
    factory returning None: analytic collective times). With ``on_fabric`` the payloads of one
    model replica run on the fabric together instead (:mod:`fabricsim.engine.fabric_loop`; the
    other replicas' traffic is left out)."""
    estimate = infer_estimate(scenario)
    planned = inference_plan(scenario, estimate)
    built = build_inference_graph(planned.plan)
    if planned.chunks_per_simulated > 1:
        built.graph.folded["prefill_chunks_per_simulated_chunk"] = math.ceil(planned.chunks_per_simulated)
    fabric_run = job = None
    if on_fabric is not None:
        from fabricsim.engine.fabric_loop import FabricJob, fabric_durations  # numpy-heavy: only when asked

        replica = planned.plan.stage_gpus * planned.plan.pipeline_parallel
        job = FabricJob("infer", built.graph, on_fabric.host_of_gpu[:replica], planned.plan.pipeline_parallel,
                        planned.call_s, system=scenario.system)
        fabric_run = fabric_durations([job], on_fabric.fabric)
        rehashed = on_fabric.durations(job, fabric_run)
        timers = None
    timer = timers(None) if timers is not None else None
    nominal = fabric_run.durations[0] if fabric_run is not None else network_durations(built, planned.call_s, timer)
    timeline = execute(built.graph, nominal)
    tpot = decode_step_s(built, timeline.end_s)  # steady state: the last step of every micro-batch
    ttft = _ttft(timeline.end_s, built)
    if variability is None or not variability.active:
        return InferenceSimulation(estimate, ttft, tpot, None, None, None, None, 0, built.graph, timeline,
                                   fabric_run, job)
    variability.validate()
    ttfts, samples = [], []
    for run in range(variability.seeds):
        durations = nominal
        if fabric_run is not None and variability.ecmp_rehash:
            durations = rehashed(run)
        elif timers is not None and variability.ecmp_rehash:
            durations = network_durations(built, planned.call_s, timers(run))
        end = execute(built.graph, perturbed(built.graph, durations, variability, run)).end_s
        ttfts.append(_ttft(end, built))
        samples.append(_intervals(end, built.token_done))
    pooled = np.concatenate(samples)
    tpot_q = [float(np.quantile(pooled, q)) for q in (0.5, 0.99)] if pooled.size else [0.0, 0.0]
    ttft_q = [float(np.quantile(ttfts, q)) for q in (0.5, 0.99)]
    return InferenceSimulation(estimate, ttft, tpot, ttft_q[0], ttft_q[1], tpot_q[0], tpot_q[1], int(pooled.size),
                               built.graph, timeline, fabric_run, job)


def decode_step_s(built: InferenceGraph, end_s: np.ndarray) -> float:
    """The steady-state time per output token: the last decode step of every micro-batch."""
    intervals = _intervals(end_s, built.token_done)
    p = len(built.token_done)
    return float(intervals[-p:].mean()) if intervals.size else 0.0


def inference_job(scenario: InferScenario, host_of_gpu: np.ndarray, name: str = "infer") -> FabricJob:
    """One model replica's batch of ``scenario`` as a job on a fabric; its time is the TPOT."""
    from fabricsim.engine.fabric_loop import FabricJob

    planned = inference_plan(scenario, infer_estimate(scenario))
    built = build_inference_graph(planned.plan)
    replica = planned.plan.stage_gpus * planned.plan.pipeline_parallel
    return FabricJob(name, built.graph, host_of_gpu[:replica], planned.plan.pipeline_parallel, planned.call_s,
                     system=scenario.system,
                     headline=lambda timeline: decode_step_s(built, timeline.end_s))
