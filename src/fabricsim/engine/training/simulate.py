"""Simulated training step: the analytic model's costs laid out as an op graph and run (layer L6).

:func:`training_plan` asks the analytic training engine (:mod:`fabricsim.engine.training.analytic`) for the
per-micro-batch work of the slowest stage (compute, recompute, exposed TP/CP/EP collectives), the
pipeline transfer, the data-parallel gradient reduction, ZeRO gathers and the optimizer step, and
turns them into a :class:`~fabricsim.workload.training_graph.TrainingPlan`: no cost is re-derived
here. Every pipeline stage gets the slowest stage's costs, as in the analytic closed form, so
with no variability and an uncontended network the two paths differ only where the closed form
approximates the schedule (the bubble, the overlap of the last gradient buckets).

Communication ops carry both their analytic time and a payload (op, bytes, group, stride) so a
flow-level network model can re-time them; TP collectives are split per pass (forward; backward
and recompute), gradient reduction into Megatron-LM's 40M-parameter buckets.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from fabricsim.engine.simulate import CommTimer, SimulationResult, simulate
from fabricsim.engine.training import analytic
from fabricsim.engine.training.analytic import StageWork, TrainingEstimate
from fabricsim.engine.training.step_time import ep_per_microbatch_s, grad_bucket_params
from fabricsim.engine.variability import TailResult, TimerFactory, Variability, monte_carlo
from fabricsim.errors import FabricsimError
from fabricsim.limits import cap, cap_hint
from fabricsim.specs import ModelSpec, ParallelLayout, Recompute, SystemSpec
from fabricsim.transformer.memory import WEIGHT_BYTES
from fabricsim.workload import training as work
from fabricsim.workload.graph import CommPayload, OpGraph, Stream
from fabricsim.workload.training import TrainingOptions
from fabricsim.workload.training_graph import ChunkCosts, TrainingPlan, Transfer, build_training_graph

if TYPE_CHECKING:
    from fabricsim.engine.fabric_loop import FabricJob, FabricRun, OnFabric

MAX_UNFOLDED_REPLICAS = 64  # data-parallel replicas simulated one by one when variability is on


@dataclass(frozen=True, slots=True)
class TrainingCase:
    """One training question: model, system, layout, batch and sequence (and framework options)."""

    model: ModelSpec
    system: SystemSpec
    layout: ParallelLayout
    global_batch: int
    seq_len: int
    options: TrainingOptions = field(default_factory=TrainingOptions)


def _link_class(system: SystemSpec, ranks: int, stride: int) -> str:
    """``scale-out`` when GPUs 0, stride, ... (ranks of them) span more than one scale-up domain."""
    return "scale-out" if (ranks - 1) * stride >= system.scale_up.domain_gpus else "scale-up"


def _payload(case: TrainingCase, op: str, size_bytes: float, group: tuple[int, int]) -> CommPayload | None:
    ranks, stride = group
    if ranks <= 1 or size_bytes <= 0:
        return None
    return CommPayload(op, int(size_bytes + 0.5), ranks, stride, _link_class(case.system, ranks, stride))


def _passes(layout: ParallelLayout) -> int:
    return 3 if layout.recompute is Recompute.FULL else 2


def _tp_transfers(case: TrainingCase, stage: StageWork, sizes: work.CommSizes, layers: int) -> tuple[Transfer, ...]:
    """Per pass (forward or backward-with-recompute share) TP, CP and EP communication."""
    layout = case.layout
    t = layout.tensor_parallel
    out: list[Transfer] = []
    share = 1.0 / _passes(layout)
    if stage.tp_comm_s > 0:
        ops = ("all-gather", "reduce-scatter") if layout.sequence_parallel else ("all-reduce",)
        timeable = not case.options.overlap_tp_comm  # exposed remainder only: keep the analytic time
        for op in ops:
            payload = _payload(case, op, sizes.tensor_bytes, (t, 1)) if timeable else None
            out.append(Transfer(stage.tp_comm_s * share / len(ops), f"tp-{op}", payload, 2 * layers, Stream.TP_COMM))
    if stage.cp_comm_s > 0:  # already the part the attention compute does not hide
        out.append(Transfer(stage.cp_comm_s * share, "cp-exchange", None, 1, Stream.CP_COMM))
    if stage.ep_comm_s > 0:
        # re-timeable only when the analytic time is one NCCL all-to-all alone (no expert-TP gathers,
        # no overlap, not DeepEP's per-domain dispatch)
        options = case.options
        timeable = layout.expert_tp == 1 and not options.a2a_overlap and options.moe_dispatcher == "alltoall"
        group = (layout.expert_parallel, layout.expert_tp)
        payload = _payload(case, "all-to-all", sizes.expert_bytes, group) if timeable else None
        out.append(Transfer(stage.ep_comm_s * share, "ep-all-to-all", payload, 2 * layers, Stream.EP_COMM))
    return tuple(out)


def _scaled(transfers: tuple[Transfer, ...], factor: float) -> tuple[Transfer, ...]:
    return tuple(
        Transfer(x.time_s * factor, x.category, x.payload, round(x.repeat * factor), x.stream) for x in transfers
    )


def _chunks(case: TrainingCase, ctx: analytic.TrainingContext, microbatches: int) -> tuple[ChunkCosts, ...]:
    layout = case.layout
    stage = ctx.stage_work(layout, case.seq_len)
    # A2A overlap: the step's average over paired and unpaired steps, as the analytic form
    stage = dataclasses.replace(stage, ep_comm_s=ep_per_microbatch_s(stage, layout, microbatches))
    sizes = work.comm_sizes(ctx.dims, layout, case.seq_len, (0.0, 0.0, 0.0), case.options.capacity_factor)
    v = layout.virtual_stages
    stage_layers = work.largest_stage(ctx.dims, layout.pipeline_parallel, case.options.pipeline_accounting).layers
    layers = max(1, stage_layers // v)
    per_pass = _tp_transfers(case, stage, sizes, layers)
    backward = _scaled(per_pass, _passes(layout) - 1)
    zero3_s = ctx.data_parallel_s(layout, ctx.stage(layout, case.seq_len))[1]
    if zero3_s > 0:  # ZeRO-3 weight gathers: the analytic exposed part, on the critical path
        backward += (Transfer(zero3_s, "dp-zero3-all-gather", None, 1, Stream.DP_COMM),)
    chunk = ChunkCosts(
        forward_s=stage.forward_s / v,
        backward_s=(stage.backward_s + stage.recompute_s) / v,
        forward_comm=_scaled(per_pass, 1.0 / v) if v > 1 else per_pass,
        backward_comm=_scaled(backward, 1.0 / v) if v > 1 else backward,
        layers=layers,
    )
    return (chunk,) * (layout.pipeline_parallel * v)


def _reduction(case: TrainingCase, ctx: analytic.TrainingContext) -> tuple[tuple[Transfer, ...], Transfer | None]:
    """Gradient buckets of one model chunk and the ZeRO parameter all-gather of one rank."""
    layout = case.layout
    dp, v = layout.data_context_parallel, layout.virtual_stages  # dense gradients: dp x cp ranks
    if dp == 1 and layout.expert_data_parallel == 1:  # experts may still have replicas (folding: tp > ep x etp)
        return (), None
    stride = layout.tensor_parallel
    entry = ctx.stage(layout, case.seq_len)  # the analytic path's own parameter split
    (dense, expert), grad = entry.trained, entry.gradient_bytes  # LoRA: the adapters' gradients only
    op = "all-reduce" if layout.zero_stage == 0 else "reduce-scatter"
    buckets: list[Transfer] = []
    gather_s = 0.0
    edp = layout.expert_data_parallel
    expert_group = (edp, layout.expert_tp * layout.expert_parallel)
    # dense bucket size: by the dp group without cp, as Megatron-Core (step_time.GRAD_BUCKET_PARAMS)
    for params, group, bucket_ranks in ((dense, (dp, stride), layout.data_parallel), (expert, expert_group, edp)):
        if params <= 0 or group[0] <= 1:
            continue
        count = max(1, math.ceil(params / v / grad_bucket_params(bucket_ranks)))
        total_s = ctx.comm.time_s(analytic.RS if op != "all-reduce" else analytic.AR, params * grad, *group)
        payload = _payload(case, op, params * grad / v / count, group)
        buckets += [Transfer(total_s / v / count, f"dp-{op}", payload, 1, Stream.DP_COMM)] * count
        if layout.zero_stage >= 1:
            gather_s += ctx.comm.time_s(analytic.AG, params * WEIGHT_BYTES, *group)
    gather = Transfer(gather_s, "dp-all-gather", None, 1, Stream.DP_COMM) if gather_s else None
    return tuple(buckets), gather


def training_plan(case: TrainingCase) -> tuple[TrainingPlan, TrainingEstimate]:
    """The op-graph plan of ``case`` and the analytic estimate it was built from."""
    layout = case.layout
    ctx = analytic.training_context(case.model, case.system, case.options)
    estimate = ctx.estimate(layout, case.global_batch, case.seq_len)
    p2p = None
    if layout.pipeline_parallel > 1:
        sizes = work.comm_sizes(ctx.dims, layout, case.seq_len, (0.0, 0.0, 0.0))
        stride = layout.tensor_parallel * layout.context_parallel * layout.data_parallel
        payload = _payload(case, "send-recv", sizes.pipeline_bytes, (2, stride))
        p2p = Transfer(ctx.comm.send_recv_s(sizes.pipeline_bytes, stride), "pp-send-recv", payload, 1, Stream.PP_SEND)
    buckets, gather = _reduction(case, ctx)
    notes = ["every stage takes the slowest stage's costs (as the analytic closed form)"]
    if layout.zero_stage == 3:
        notes.append("ZeRO-3 per-micro-batch gathers are kept as the analytic exposed time (not re-timed)")
    plan = TrainingPlan(
        pipeline_parallel=layout.pipeline_parallel,
        virtual_stages=layout.virtual_stages,
        micro_batches=estimate.microbatches,
        chunks=_chunks(case, ctx, estimate.microbatches),
        p2p=p2p,
        grad_buckets=(buckets,) * (layout.pipeline_parallel * layout.virtual_stages),
        param_gather=(gather,) * layout.pipeline_parallel if gather else (),
        optimizer_s=(estimate.time.optimizer_s,) * layout.pipeline_parallel,
        tensor_parallel=layout.tensor_parallel,
        data_parallel=layout.data_parallel,
        overlap_grad_reduce=case.options.overlap_grad_reduce,
        overlap_param_gather=case.options.overlap_param_gather,
        notes=tuple(notes),
    )
    return plan, estimate


@dataclass(frozen=True, slots=True)
class TrainingSimulation:
    """A simulated step next to the analytic estimate it started from; ``tail`` with variability."""

    estimate: TrainingEstimate
    graph: OpGraph
    result: SimulationResult
    tail: TailResult | None
    fabric_run: FabricRun | None = None  # with the fabric in the loop: the mixes it timed
    job: FabricJob | None = None

    @property
    def step_time_s(self) -> float:
        return self.result.step_time_s


def check_simulated_passes(plan: TrainingPlan, replicas: int, runs: int) -> int:
    """Micro-batch passes a simulation of ``plan`` executes (micro-batches x pipeline chunks x
    ``replicas`` x ``runs`` executions of the graph), or a one-line error above the cap
    ``SIMULATED_PASSES``: a 2^24-sequence batch would build a graph of tens of millions of ops."""
    chunks = plan.pipeline_parallel * plan.virtual_stages
    passes = plan.micro_batches * chunks * replicas * runs
    limit = cap("SIMULATED_PASSES")
    if passes > limit:
        raise FabricsimError(
            "global-batch",
            f"{plan.micro_batches} micro-batches x {chunks} pipeline chunks x {replicas} replicas x {runs} runs"
            f" = {passes} simulated passes exceeds the cap {limit}",
            "lower --global-batch or --seeds, raise --micro-batch, use --fidelity analytic,"
            f" or {cap_hint('SIMULATED_PASSES')}",
        )
    return passes


def simulate_training(
    case: TrainingCase,
    timers: TimerFactory,
    variability: Variability | None = None,
    on_fabric: OnFabric | None = None,
) -> TrainingSimulation:
    """Simulate one step of ``case``; ``timers(None)`` times payloads (None: analytic times kept).

    With per-GPU ``variability`` (stragglers, jitter), up to :data:`MAX_UNFOLDED_REPLICAS`
    data-parallel replicas are simulated one by one (the folding is reported in ``graph.folded``) and ``tail`` holds the
    Monte-Carlo step times. With ``on_fabric`` (a fabric, the endpoint of every GPU rank, and the
    fabric for a Monte-Carlo run's ECMP hash seed) the collectives run on the fabric together
    (:mod:`fabricsim.engine.fabric_loop`) and ``timers`` is not used.
    """
    plan, estimate = training_plan(case)
    active = variability is not None and variability.active
    per_gpu = variability is not None and variability.per_gpu  # ECMP re-hashing alone keeps replicas equal
    replicas = min(plan.data_parallel, MAX_UNFOLDED_REPLICAS) if per_gpu else 1
    runs = 1 + (variability.seeds + 1 if active and variability is not None else 0)  # + monte_carlo's
    check_simulated_passes(plan, replicas, runs)
    graph = build_training_graph(plan, replicas)
    if on_fabric is not None:
        from fabricsim.engine.fabric_loop import FabricJob, simulate_jobs  # numpy-heavy: only when asked

        job = FabricJob("train", graph, on_fabric.host_of_gpu, plan.pipeline_parallel, system=case.system)
        results, run = simulate_jobs([job], on_fabric.fabric)
        tail = None
        if active and variability is not None:
            tail = monte_carlo(graph, timers, variability, on_fabric.durations(job, run))
        return TrainingSimulation(estimate, graph, results[0], tail, run, job)
    timer: CommTimer | None = timers(None)
    result = simulate(graph, timer)
    tail = monte_carlo(graph, timers, variability) if active and variability is not None else None
    return TrainingSimulation(estimate, graph, result, tail)


_BREAKDOWN_KEYS = {"tp": "tp_comm_s", "cp": "cp_comm_s", "ep": "ep_comm_s", "pp": "pp_comm_s", "dp": "dp_comm_s"}


def _union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length (s) of the union of intervals."""
    if starts.size == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], np.maximum.accumulate(ends[order])
    gaps = np.maximum(s[1:] - e[:-1], 0.0)
    return float(e[-1] - s[0] - gaps.sum())


def step_breakdown(sim: TrainingSimulation) -> dict[str, float]:
    """Seconds of the simulated step on its critical rank (the one that finishes last), adding up to
    the step time: compute by kind, exposed communication by parallelism (the time communication
    is in flight and compute is not, split over categories by their own exposed time), and idle
    time (pipeline bubble and waiting on other stages)."""
    graph, timeline = sim.graph, sim.result.timeline
    ops = graph.ops
    rank = ops[int(np.argmax(timeline.end_s))].rank
    mine = np.array([i for i, op in enumerate(ops) if op.rank == rank])
    comm = np.array([ops[i].is_comm for i in mine])
    start, end = timeline.start_s[mine], timeline.end_s[mine]
    out = {"forward_compute_s": 0.0, "backward_compute_s": 0.0, "optimizer_s": 0.0}
    for i, duration in zip(mine[~comm].tolist(), (end - start)[~comm].tolist(), strict=True):
        key = {"forward": "forward_compute_s", "backward": "backward_compute_s"}.get(ops[i].category, "optimizer_s")
        out[key] += duration
    busy = _union_length(start, end)
    exposed_total = busy - _union_length(start[~comm], end[~comm])
    per_category = {k: v for k, v in sim.result.comm.exposed_s.items() if v > 0}
    weights = dict.fromkeys(_BREAKDOWN_KEYS.values(), 0.0)
    for category, value in per_category.items():
        weights[_BREAKDOWN_KEYS.get(category.split("-")[0], "dp_comm_s")] += value
    total_weight = sum(weights.values())
    for key, weight in weights.items():
        out[key] = exposed_total * weight / total_weight if total_weight else 0.0
    out["pipeline_bubble_s"] = sim.step_time_s - busy
    analytic_time = sim.estimate.time  # backward ops include recompute: split it the analytic way
    backward_and_recompute = analytic_time.backward_compute_s + analytic_time.recompute_s
    share = analytic_time.recompute_s / backward_and_recompute if backward_and_recompute else 0.0
    out["recompute_s"] = out["backward_compute_s"] * share
    out["backward_compute_s"] -= out["recompute_s"]
    return out


def training_job(case: TrainingCase, host_of_gpu: np.ndarray, name: str = "train") -> FabricJob:
    """One training step of ``case`` as a job on a fabric, rank g on endpoint ``host_of_gpu[g]``."""
    from fabricsim.engine.fabric_loop import FabricJob

    plan, _ = training_plan(case)
    check_simulated_passes(plan, 1, 1)
    return FabricJob(name, build_training_graph(plan), host_of_gpu, plan.pipeline_parallel, system=case.system)
