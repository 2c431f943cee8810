"""Analytic training-step estimate: closed form, microseconds per layout (layer L6).

One step of a layout is: ``m`` micro-batches through the slowest pipeline stage (forward,
backward, recomputation and the exposed tensor/context/expert-parallel collectives and pipeline
send/recv of each), the pipeline bubble ((pp - 1)/vpp of a micro-batch's stage time), the exposed
part of the data-parallel gradient reduction (and ZeRO gathers), and the optimizer step::

    step = m·t_microbatch + (pp-1)/vpp·t_stage + dp_exposed + optimizer

The breakdown in :class:`TimeBreakdown` adds up to ``step_time_s`` exactly. Results are immutable
named tuples (cheaper to build than frozen dataclasses on this hot path). Work that depends only
on (model, system, options) or on the per-layer shape is cached, so a planner sweeping millions
of layouts pays mostly for the arithmetic of the composition.

Public entry points: :func:`estimate_training` (full estimate), :func:`training_memory`
(memory only, for pruning), :func:`check_layout` (raises ``FabricsimError`` for invalid layouts).
"""

from __future__ import annotations

from fabricsim.collectives import CollectiveOp
from fabricsim.engine.comm import CollectiveTimes
from fabricsim.engine.training_types import (
    MemoryBreakdown,
    StageEntry,
    StageWork,
    TimeBreakdown,
    TrainingEstimate,
)
from fabricsim.specs import ModelSpec, ParallelLayout, Recompute, SystemSpec
from fabricsim.transformer.compute import (
    DeviceRates,
    LayerTimes,
    ShardShape,
    device_rates,
    layer_forward_times,
    logits_times_s,
)
from fabricsim.transformer.constants import (
    ADAM_STATE_BYTES_PER_PARAM,
    FRAMEWORK_MEMORY_BYTES,
    OPTIMIZER_BYTES_PER_PARAM_UPDATE,
)
from fabricsim.transformer.flops import ModelDims, hardware_flops_per_step, model_dims, model_flops_per_step
from fabricsim.transformer.memory import (
    WEIGHT_BYTES,
    gradient_bytes_per_param,
    layer_activation_bytes,
    logits_activation_bytes,
)
from fabricsim.workload import training as work
from fabricsim.workload.pipeline import in_flight_microbatches, p2p_transfers_per_microbatch
from fabricsim.workload.training import TrainingOptions

# Megatron-LM DistributedDataParallelConfig default bucket: 40M parameters (max(40M, 1M x dp)).
GRAD_BUCKET_PARAMS = 40.0e6

AR, AG, RS, A2A = CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_TO_ALL


class TrainingContext:
    """Per-(model, system, options) precomputation and caches; no I/O."""

    __slots__ = ("_dp_cache", "_flops", "_peaks", "_rates", "_stage_cache", "comm", "dims", "options", "system")

    def __init__(self, model: ModelSpec, system: SystemSpec, options: TrainingOptions) -> None:
        self.dims: ModelDims = model_dims(model)
        self.system = system
        self.options = options
        self.comm = CollectiveTimes(system)
        self._rates: dict[str, DeviceRates] = {}
        self._peaks: dict[str, float] = {}
        self._flops: dict[tuple[int, int, Recompute], tuple[float, float]] = {}
        self._stage_cache: dict[tuple, StageEntry] = {}
        self._dp_cache: dict[tuple[int, int, int], tuple[float, float, float]] = {}

    def rates(self, dtype: str) -> DeviceRates:
        rates = self._rates.get(dtype)
        if rates is None:
            rates = self._rates[dtype] = device_rates(self.system.device, dtype)
        return rates

    def peak_flops(self, dtype: str) -> float:
        peak = self._peaks.get(dtype)
        if peak is None:
            peak = self._peaks[dtype] = self.system.device.peak(dtype)
        return peak

    def flops(self, global_batch: int, seq_len: int, recompute: Recompute) -> tuple[float, float]:
        """(model, hardware) FLOPs of one step."""
        key = (global_batch, seq_len, recompute)
        flops = self._flops.get(key)
        if flops is None:
            flops = self._flops[key] = (
                model_flops_per_step(self.dims, global_batch, seq_len),
                hardware_flops_per_step(self.dims, global_batch, seq_len, recompute),
            )
        return flops

    def stage(self, layout: ParallelLayout, seq_len: int) -> StageEntry:
        """Everything about the slowest stage that depends on the per-GPU shape only (cached)."""
        key = (
            layout.tensor_parallel,
            layout.pipeline_parallel,
            layout.context_parallel,
            layout.expert_parallel,
            layout.micro_batch_size,
            layout.sequence_parallel,
            layout.recompute,
            layout.dtype,
            seq_len,
        )
        entry = self._stage_cache.get(key)
        if entry is None:
            entry = self._stage_cache[key] = _stage_entry(self, layout, seq_len)
        return entry

    def stage_work(self, layout: ParallelLayout, seq_len: int) -> StageWork:
        return self.stage(layout, seq_len).work

    def data_parallel_s(self, layout: ParallelLayout, entry: StageEntry) -> tuple[float, float, float]:
        """(exposed DP reduction + gathers per step, ZeRO-3 exposed per micro-batch, optimizer) seconds."""
        key = (id(entry), layout.data_parallel, layout.zero_stage)
        times = self._dp_cache.get(key)
        if times is None:
            params = (entry.dense_params, entry.expert_params)
            times = self._dp_cache[key] = (
                _dp_exposed_s(self, layout, entry.work, params),
                _zero3_exposed_s(self, layout, entry.work, params),
                _optimizer_s(self, layout, params),
            )
        return times


_CONTEXTS: dict[tuple[int, int, TrainingOptions], tuple[ModelSpec, SystemSpec, TrainingContext]] = {}
_CONTEXT_LIMIT = 64
_DEFAULT_OPTIONS = TrainingOptions()


def training_context(model: ModelSpec, system: SystemSpec, options: TrainingOptions | None = None) -> TrainingContext:
    """The cached :class:`TrainingContext` of (model, system, options) (memoised by identity)."""
    options = options or _DEFAULT_OPTIONS
    last = _LAST_CONTEXT[0]
    if last is not None and last[0] is model and last[1] is system and last[2] is options:
        return last[3]
    key = (id(model), id(system), options)
    entry = _CONTEXTS.get(key)
    if entry is None or entry[0] is not model or entry[1] is not system:
        if len(_CONTEXTS) >= _CONTEXT_LIMIT:
            _CONTEXTS.clear()
        entry = (model, system, TrainingContext(model, system, options))
        _CONTEXTS[key] = entry
    _LAST_CONTEXT[0] = (model, system, options, entry[2])
    return entry[2]


_LAST_CONTEXT: list[tuple[ModelSpec, SystemSpec, TrainingOptions, TrainingContext] | None] = [None]


def _shape(ctx: TrainingContext, layout: ParallelLayout, seq_len: int) -> ShardShape:
    return ShardShape(
        micro_batch=layout.micro_batch_size,
        seq_len=seq_len,
        tensor_parallel=layout.tensor_parallel,
        context_parallel=layout.context_parallel,
        expert_parallel=layout.expert_parallel,
        sequence_parallel=layout.sequence_parallel,
        flash_attention=ctx.options.flash_attention,
    )


def _recompute_s(times: LayerTimes, recompute: Recompute) -> float:
    if recompute is Recompute.FULL:
        return times.total_s
    return times.attention_s if recompute is Recompute.SELECTIVE else 0.0


def _layer_comm_s(
    ctx: TrainingContext, layout: ParallelLayout, sizes: work.CommSizes, times: LayerTimes
) -> tuple[float, float]:
    """Exposed (tensor-parallel, context-parallel) seconds of one layer, forward + backward + recompute."""
    t, comm = layout.tensor_parallel, ctx.comm
    passes = 3.0 if layout.recompute is Recompute.FULL else 2.0
    if layout.sequence_parallel:
        per_pass = 2.0 * (comm.time_s(AG, sizes.tensor_bytes, t, 1) + comm.time_s(RS, sizes.tensor_bytes, t, 1))
    else:
        per_pass = 2.0 * comm.time_s(AR, sizes.tensor_bytes, t, 1)
    tp = passes * per_pass
    if ctx.options.overlap_tp_comm:
        tp = max(0.0, tp - passes * times.linear_s)
    cp_fwd = comm.time_s(AG, sizes.context_kv_bytes, layout.context_parallel, t)
    cp_bwd = cp_fwd + comm.time_s(RS, sizes.context_kv_bytes, layout.context_parallel, t)
    cp = max(0.0, cp_fwd - times.attention_s) + max(0.0, cp_bwd - 2.0 * times.attention_s)
    if layout.recompute is Recompute.FULL:
        cp += max(0.0, cp_fwd - times.attention_s)
    return tp, cp


def _stage_work(ctx: TrainingContext, layout: ParallelLayout, seq_len: int) -> StageWork:
    dims, rates = ctx.dims, ctx.rates(layout.dtype)
    shape = _shape(ctx, layout, seq_len)
    stage = work.largest_stage(dims, layout.pipeline_parallel)
    sizes = work.comm_sizes(dims, layout, seq_len, (0.0, 0.0, 0.0))
    forward = backward = recompute = tp = cp = ep = 0.0
    for count, moe in ((stage.dense_layers, False), (stage.moe_layers, True)):
        if count == 0:
            continue
        times = layer_forward_times(dims, rates, shape, moe)
        tp_layer, cp_layer = _layer_comm_s(ctx, layout, sizes, times)
        forward += count * times.total_s
        backward += count * times.backward_s
        recompute += count * _recompute_s(times, layout.recompute)
        tp += count * tp_layer
        cp += count * cp_layer
        if moe:
            passes = 6.0 if layout.recompute is Recompute.FULL else 4.0
            stride = layout.tensor_parallel * layout.context_parallel
            ep += count * passes * ctx.comm.time_s(A2A, sizes.expert_bytes, layout.expert_parallel, stride)
    logits_fwd, logits_bwd = logits_times_s(dims, rates, shape)
    share = 1.0
    if layout.pipeline_parallel > 1:  # the last stage has floor(L/pp) layers plus the output layer
        last_layers = dims.layers // layout.pipeline_parallel
        extra = last_layers * (forward + backward) / stage.layers + logits_fwd + logits_bwd - (forward + backward)
        share = max(0.0, extra) / (logits_fwd + logits_bwd)
    return StageWork(forward + share * logits_fwd, backward + share * logits_bwd, recompute, tp, cp, ep)


def resolve_layout(gpus: int, model: ModelSpec, **given: object) -> ParallelLayout:
    """A layout with defaults for the unset fields (see :func:`fabricsim.workload.training.resolve_layout`)."""
    return work.resolve_layout(gpus, model_dims(model), **given)


def check_layout(model: ModelSpec | ModelDims, layout: ParallelLayout, global_batch: int, seq_len: int) -> int:
    """Raise ``FabricsimError`` (naming the field) unless the layout can run; return micro-batches per step."""
    dims = model if isinstance(model, ModelDims) else model_dims(model)
    return work.check_layout(dims, layout, layout.gpus, global_batch, seq_len)


def _stage_params(ctx: TrainingContext, layout: ParallelLayout) -> tuple[float, float]:
    """(dense, expert) parameters on one GPU of the largest stage, before ZeRO sharding."""
    dims = ctx.dims
    stage = work.largest_stage(dims, layout.pipeline_parallel)
    dense, expert = work.stage_parameters(dims, stage, layout.tensor_parallel, layout.expert_parallel)
    if layout.pipeline_parallel == 1 and not dims.tied_embeddings:  # one GPU holds both ends
        dense += min(dims.embedding_params, dims.output_params) / layout.tensor_parallel
    return dense, expert


def _stage_entry(ctx: TrainingContext, layout: ParallelLayout, seq_len: int) -> StageEntry:
    dims = ctx.dims
    stage = work.largest_stage(dims, layout.pipeline_parallel)
    shape = _shape(ctx, layout, seq_len)
    per_mb = stage.dense_layers * layer_activation_bytes(dims, shape, layout.recompute, False)
    per_mb += stage.moe_layers * layer_activation_bytes(dims, shape, layout.recompute, True)
    working = 0.0
    if layout.recompute is Recompute.FULL:  # one layer's activations rebuilt during its backward
        working = layer_activation_bytes(dims, shape, Recompute.NONE, stage.moe_layers > 0)
    dense, expert = _stage_params(ctx, layout)
    return StageEntry(
        work=_stage_work(ctx, layout, seq_len),
        dense_params=dense,
        expert_params=expert,
        layers=stage.layers,
        activation_per_microbatch=per_mb,
        logits_activation=logits_activation_bytes(dims, shape),
        recompute_working=working,
        p2p_bytes=work.comm_sizes(dims, layout, seq_len, (0.0, 0.0, 0.0)).pipeline_bytes,
    )


def _memory(layout: ParallelLayout, entry: StageEntry, microbatches: int) -> MemoryBreakdown:
    """Bytes on the most loaded GPU: model states after ZeRO sharding, activations of the in-flight
    micro-batches on stage 0 (or one micro-batch plus the logits on the last stage), overhead."""
    dp, zero = layout.data_parallel, layout.zero_stage
    edp = max(1, dp // layout.expert_parallel)
    dense, expert = entry.dense_params, entry.expert_params
    sharded = dense / dp + expert / edp
    unsharded = dense + expert
    weights = WEIGHT_BYTES * (sharded if zero >= 3 else unsharded)
    if zero == 3 and dp > 1:  # two layers gathered at a time (current + prefetched)
        weights += 2.0 * WEIGHT_BYTES * unsharded / max(1, entry.layers)
    gradients = gradient_bytes_per_param(layout.dtype) * (sharded if zero >= 2 else unsharded)
    optimizer = ADAM_STATE_BYTES_PER_PARAM * (sharded if zero >= 1 else unsharded)
    pp = layout.pipeline_parallel
    first = in_flight_microbatches(pp, layout.virtual_stages, microbatches) * entry.activation_per_microbatch
    if pp == 1:
        activations = first + entry.logits_activation
    else:
        activations = max(first, entry.activation_per_microbatch + entry.logits_activation)
    activations += entry.recompute_working
    return MemoryBreakdown(weights, gradients, optimizer, activations, FRAMEWORK_MEMORY_BYTES)


def training_memory(
    model: ModelSpec,
    system: SystemSpec,
    layout: ParallelLayout,
    global_batch: int,
    seq_len: int,
    options: TrainingOptions | None = None,
) -> MemoryBreakdown:
    """Memory per GPU only (bytes by kind), for pruning layouts before timing them."""
    ctx = training_context(model, system, options)
    microbatches = work.check_layout(ctx.dims, layout, layout.gpus, global_batch, seq_len)
    return _memory(layout, ctx.stage(layout, seq_len), microbatches)


def _dp_exposed_s(ctx: TrainingContext, layout: ParallelLayout, stage: StageWork, params: tuple[float, float]) -> float:
    """Exposed seconds of the data-parallel gradient reduction and ZeRO parameter gathers."""
    dp, ep, zero = layout.data_parallel, layout.expert_parallel, layout.zero_stage
    if dp == 1:
        return 0.0
    comm, stride = ctx.comm, layout.tensor_parallel * layout.context_parallel
    dense, expert = params
    grad = gradient_bytes_per_param(layout.dtype)
    op = AR if zero == 0 else RS
    reduce_s = comm.time_s(op, dense * grad, dp, stride) + comm.time_s(op, expert * grad, dp // ep, stride * ep)
    gather_s = 0.0
    if zero >= 1:  # updated parameters all-gathered after the (sharded) optimizer step
        gather_s = comm.time_s(AG, dense * WEIGHT_BYTES, dp, stride)
        gather_s += comm.time_s(AG, expert * WEIGHT_BYTES, dp // ep, stride * ep)
    if not ctx.options.overlap_grad_reduce:
        return reduce_s + gather_s
    total = dense + expert
    tail = reduce_s * min(1.0, GRAD_BUCKET_PARAMS / total) if total else 0.0
    exposed = max(tail, reduce_s - stage.backward_s - stage.recompute_s)
    return exposed + max(0.0, gather_s - stage.forward_s)


def _zero3_exposed_s(
    ctx: TrainingContext, layout: ParallelLayout, stage: StageWork, params: tuple[float, float]
) -> float:
    """ZeRO-3/FSDP: per micro-batch the weights are all-gathered for forward and for backward."""
    if layout.zero_stage < 3 or layout.data_parallel == 1:
        return 0.0
    stride = layout.tensor_parallel * layout.context_parallel
    gather = ctx.comm.time_s(AG, params[0] * WEIGHT_BYTES, layout.data_parallel, stride)
    edp = layout.data_parallel // layout.expert_parallel
    gather += ctx.comm.time_s(AG, params[1] * WEIGHT_BYTES, edp, stride * layout.expert_parallel)
    return max(0.0, gather - stage.forward_s) + max(0.0, gather - stage.backward_s - stage.recompute_s)


def _optimizer_s(ctx: TrainingContext, layout: ParallelLayout, params: tuple[float, float]) -> float:
    dense, expert = params
    if layout.zero_stage >= 1:
        dense /= layout.data_parallel
        expert /= max(1, layout.data_parallel // layout.expert_parallel)
    return (dense + expert) * OPTIMIZER_BYTES_PER_PARAM_UPDATE / ctx.rates(layout.dtype).hbm_Bps


def _time(ctx: TrainingContext, layout: ParallelLayout, entry: StageEntry, microbatches: int) -> TimeBreakdown:
    stage = entry.work
    m = microbatches
    pp, vpp = layout.pipeline_parallel, layout.virtual_stages
    p2p = 0.0
    if pp > 1:
        stride = layout.tensor_parallel * layout.context_parallel * layout.data_parallel
        p2p = p2p_transfers_per_microbatch(pp, vpp) * ctx.comm.send_recv_s(entry.p2p_bytes, stride)
    dp_s, zero3, optimizer_s = ctx.data_parallel_s(layout, entry)
    per_mb = stage.forward_s + stage.backward_s + stage.recompute_s + stage.tp_comm_s + stage.cp_comm_s
    per_mb += stage.ep_comm_s + zero3
    return TimeBreakdown(
        forward_compute_s=m * stage.forward_s,
        backward_compute_s=m * stage.backward_s,
        recompute_s=m * stage.recompute_s,
        tp_comm_s=m * stage.tp_comm_s,
        cp_comm_s=m * stage.cp_comm_s,
        ep_comm_s=m * stage.ep_comm_s,
        pp_comm_s=m * p2p,
        pipeline_bubble_s=(pp - 1) / vpp * per_mb,  # bubble_stage_times(pp, vpp), inlined
        dp_comm_s=m * zero3 + dp_s,
        optimizer_s=optimizer_s,
    )


def estimate_training(
    model: ModelSpec,
    system: SystemSpec,
    layout: ParallelLayout,
    global_batch: int,
    seq_len: int,
    options: TrainingOptions | None = None,
) -> TrainingEstimate:
    """Analytic estimate of one training step (no I/O, no catalog look-ups).

    Raises ``FabricsimError`` for an invalid layout; a layout that does not fit in memory is a
    result with ``fits`` False. Cost: ~10-20 µs per layout once the context's caches are warm.
    """
    ctx = training_context(model, system, options)
    microbatches = work.check_layout(ctx.dims, layout, layout.gpus, global_batch, seq_len)
    entry = ctx.stage(layout, seq_len)
    time = _time(ctx, layout, entry, microbatches)
    model_flops, hardware_flops = ctx.flops(global_batch, seq_len, layout.recompute)
    return TrainingEstimate(
        layout=layout,
        global_batch=global_batch,
        seq_len=seq_len,
        microbatches=microbatches,
        step_time_s=time.total_s,
        model_flops=model_flops,
        hardware_flops=hardware_flops,
        peak_flops_per_gpu=ctx.peak_flops(layout.dtype),
        time=time,
        memory=_memory(layout, entry, microbatches),
        memory_capacity_bytes=system.device.hbm_capacity_bytes,
    )
