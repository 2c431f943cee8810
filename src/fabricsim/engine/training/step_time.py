"""Time of one training step from the per-GPU work of its slowest stage (layer L6).

The closed form of :mod:`fabricsim.engine.training.analytic`: per layer, the forward/backward/recompute
compute (:mod:`fabricsim.transformer.compute`) and the exposed tensor-, context- and
expert-parallel collectives (``max(0, comm - overlappable compute)``); per step, the exposed
data-parallel gradient reduction (Megatron-LM buckets overlapped with backward, or after it) and
ZeRO gathers, the optimizer step (HBM-bound), the pipeline send/recv and the bubble
(:func:`fabricsim.workload.pipeline.bubble_stage_times`), composed as::

    step = m·t_microbatch + (pp-1)/vpp·t_stage + dp_exposed + optimizer

Functions take a :class:`StepContext` (the analytic engine's per-sweep context satisfies it) so
their collective and rate look-ups are cached by the caller.
"""

from __future__ import annotations

from typing import Protocol

from fabricsim.collectives import CollectiveOp, place_group
from fabricsim.collectives.dispatch import deepep_dispatch_s
from fabricsim.collectives.times import CollectiveTimes
from fabricsim.engine.training.results import PlacedStage, StageEntry, StageWork, TimeBreakdown, new_time_breakdown
from fabricsim.specs import ParallelLayout, Recompute, SystemSpec, recompute_modules
from fabricsim.transformer.compute import (
    GELU_BYTES,
    LAYERNORM_BYTES,
    SWIGLU_BYTES,
    DeviceRates,
    LayerTimes,
    ShardShape,
    gemm_time_s,
    memory_time_s,
)
from fabricsim.transformer.constants import (
    FP16_UNSCALE_BYTES,
    GRAD_NAN_CHECK_PASSES,
    GRAD_SCALE_PASSES,
    MAIN_GRAD_COPY_BYTES,
    OPTIMIZER_SHARD_BYTES,
)
from fabricsim.transformer.flops import ModelDims
from fabricsim.transformer.memory import WEIGHT_BYTES
from fabricsim.transformer.moe import expert_shard
from fabricsim.workload import training as work
from fabricsim.workload.pipeline import a2a_paired_share, bubble_stage_times, p2p_transfers_per_microbatch
from fabricsim.workload.training import TrainingOptions

# Megatron-Core's default gradient bucket: max(40M, 1M x dp) parameters (DistributedDataParallel:
# ``bucket_size = max(40000000, 1000000 * dp_group.size())``, the data-parallel group *without*
# context parallelism, distributed_data_parallel.py:134 @ d98e8a6, although the buckets are reduced
# over dp x cp).
GRAD_BUCKET_PARAMS = 40.0e6
GRAD_BUCKET_PARAMS_PER_DP_RANK = 1.0e6


def grad_bucket_params(data_parallel: int) -> float:
    """Parameters per gradient bucket of a data-parallel group of ``data_parallel`` ranks."""
    return max(GRAD_BUCKET_PARAMS, GRAD_BUCKET_PARAMS_PER_DP_RANK * data_parallel)

# Share of the SMs an overlapped expert all-to-all takes from the compute it hides behind: DeepSeek-V3
# runs its dispatch/combine on 20 of the H800's 132 SMs (arXiv 2412.19437 sec. 3.2.2); DeepEP's
# normal kernels use 20-24 (deepseek-ai/DeepEP README). Compute under the exchange runs that much slower.
A2A_OVERLAP_SM_SHARE = 20.0 / 132.0
# Slowdown of compute kernels while an overlapped collective (tensor-parallel userbuffers, data-parallel
# gradient reduction and parameter gathers, context-parallel exchange) runs beside them: 18.9% on
# average over GPT/LLaMA kernels on A100 and H100 (Lee et al., arXiv 2507.03114; kernel-efficiency.md
# S9). Its size matches the SMs NVIDIA's recipes hand the communication kernels: NeMo's userbuffers
# configs reserve 24 of the H100's 132 SMs (18%) and 32 of the B200's 148 (22%) (S10).
OVERLAP_COMPUTE_SLOWDOWN = 0.189

AR, AG, RS, A2A = CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_TO_ALL


class StepContext(Protocol):
    """What the step-time functions need: model dimensions, cached collective times, options and
    device rates per dtype."""

    dims: ModelDims
    comm: CollectiveTimes
    options: TrainingOptions
    system: SystemSpec
    layer_works: dict[tuple, StageWork]  # one layer's work by (dtype, shape, MoE, recompute): :func:`_unit_layer_work`

    def rates(self, dtype: str) -> DeviceRates: ...

    def layer_times(self, dtype: str, shape: ShardShape, moe: bool) -> LayerTimes:
        """:func:`~fabricsim.transformer.compute.layer_forward_times` of the context's model and device."""
        ...

    def logits_times(self, dtype: str, shape: ShardShape) -> tuple[float, float]:
        """:func:`~fabricsim.transformer.compute.logits_times_s` of the context's model and device."""
        ...


def overlapped_s(comm_s: float, compute_s: float, slowdown: float | None = None) -> float:
    """Seconds a collective of ``comm_s`` adds when it runs under ``compute_s`` of compute: the part
    that does not fit under the compute, plus the compute's slowdown while the two run together
    (``slowdown`` None: :data:`OVERLAP_COMPUTE_SLOWDOWN`)."""
    hidden = min(comm_s, compute_s)
    return comm_s - hidden + (OVERLAP_COMPUTE_SLOWDOWN if slowdown is None else slowdown) * hidden


def shard_shape(ctx: StepContext, layout: ParallelLayout, seq_len: int) -> ShardShape:
    """The per-GPU shape of one micro-batch of ``layout`` (tokens of ``seq_len``)."""
    return ShardShape(
        micro_batch=layout.micro_batch_size,
        seq_len=seq_len,
        tensor_parallel=layout.tensor_parallel,
        context_parallel=layout.context_parallel,
        expert_parallel=layout.expert_parallel,
        sequence_parallel=layout.sequence_parallel,
        flash_attention=ctx.options.flash_attention,
        expert_tensor_parallel=layout.expert_tp,
        capacity_factor=ctx.options.capacity_factor or 1.0,
        cross_entropy=ctx.options.cross_entropy,
        sort_chunks=ctx.options.moe_dispatcher == "alltoall",
        frozen_weights=ctx.options.frozen_base,
    )


def recompute_s(
    dims: ModelDims, rates: DeviceRates, shape: ShardShape, moe: bool, times: LayerTimes, modules: frozenset[str]
) -> float:
    """Seconds one layer recomputes in backward under selective recomputation of ``modules``
    (Megatron-Core ``--recompute-modules``, :func:`fabricsim.specs.recompute_modules`), priced by the
    compute model: the core attention's forward (``core_attn``), the two norms' forward
    (``layernorm``, bandwidth-bound), MLA's Q and KV up-projection GEMMs (``mla_up_proj``), the
    routed experts' activation (``moe_act``), a dense layer's MLP GEMMs and activation (``mlp``) and
    an MoE layer's shared experts (``shared_experts``). The tensor-parallel collectives inside a
    recomputed MLP are not charged again."""
    t = shape.tensor_parallel
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    replicated_tokens = tokens / t if shape.sequence_parallel else tokens
    act_bytes = SWIGLU_BYTES[0] if dims.gated else GELU_BYTES[0]
    up = 2 if dims.gated else 1
    seconds = times.attention_s if "core_attn" in modules else 0.0
    if "layernorm" in modules:
        seconds += memory_time_s(rates, 2.0 * LAYERNORM_BYTES[0] * replicated_tokens * dims.hidden, kernels=2.0)
    if "mla_up_proj" in modules and dims.mla:
        nope = dims.qk_head_dim - dims.qk_rope_dim
        seconds += gemm_time_s(rates, tokens, dims.heads * dims.qk_head_dim / t, dims.q_lora_rank or dims.hidden)
        seconds += gemm_time_s(rates, tokens, dims.heads * (nope + dims.v_head_dim) / t, dims.kv_lora_rank)
    if "moe_act" in modules and moe:
        parallel = (t, shape.expert_parallel, shape.expert_tensor_parallel or t)
        cf = shape.capacity_factor
        ex = expert_shard(tokens, dims.experts, dims.experts_per_token, dims.expert_ffn, parallel, cf)
        seconds += memory_time_s(rates, act_bytes * ex.pairs * ex.ffn_shard)
    if "mlp" in modules and not moe:
        seconds += times.mlp_linear_s + memory_time_s(rates, act_bytes * tokens * dims.ffn / t)
    if "shared_experts" in modules and moe and dims.shared_experts:
        width = dims.shared_experts * dims.expert_ffn / t
        seconds += gemm_time_s(rates, tokens, up * width, dims.hidden) + gemm_time_s(rates, tokens, dims.hidden, width)
        seconds += memory_time_s(rates, act_bytes * tokens * width)
    return seconds


def expert_comm_s(ctx: StepContext, layout: ParallelLayout, sizes: work.CommSizes) -> float:
    """Seconds of one MoE layer's token exchange for one micro-batch, forward + backward (+ the
    recomputed forward under full recomputation): dispatch and combine all-to-alls over the ep
    ranks of an expert group (stride etp: Megatron-Core's expert rank order, so a group stays
    inside the NVLink domain while etp x ep fits there and crosses the scale-out network
    otherwise -- the collective model splits the bytes over the tiers; with the DeepEP dispatcher
    :mod:`fabricsim.collectives.dispatch` sends a token once per remote domain) and, with expert TP,
    the all-gather / reduce-scatter of the received tokens over the expert-TP group."""
    passes = 3.0 if layout.recompute is Recompute.FULL else 2.0
    etp, ep = layout.expert_tp, layout.expert_parallel
    if ctx.options.moe_dispatcher == "deepep" and ep > 1 and sizes.expert_bytes:
        k = ctx.dims.experts_per_token
        token_bytes = 2.0 * ctx.dims.hidden
        tokens = sizes.expert_bytes / (k * token_bytes)  # tokens each rank dispatches (x capacity factor)
        latency_s = ctx.comm.time_s(A2A, 1.0, ep, etp)  # the same launch/hop latency as the all-to-all
        group = place_group(ctx.system, ep, etp)
        # Megatron-Core hands DeepEP the 16-bit hidden states in FP8 runs too (fused_a2a.FusedDispatch;
        # FP8 quantisation happens inside the expert GEMMs after the exchange): dispatch and combine alike
        per_pass = 2.0 * deepep_dispatch_s(group, tokens, k, token_bytes, latency_s)
    else:
        per_pass = 2.0 * ctx.comm.time_s(A2A, sizes.expert_bytes, ep, etp)
    if sizes.expert_tp_bytes:
        gathered = sizes.expert_tp_bytes
        per_pass += ctx.comm.time_s(AG, gathered, etp, 1) + ctx.comm.time_s(RS, gathered, etp, 1)
    return passes * per_pass


def paired_a2a_s(comm_s: float, times: LayerTimes, passes: int) -> float:
    """Exposed seconds of one MoE layer's token exchange (``comm_s`` over ``passes`` passes) under
    1F1B A2A overlap (Megatron-Core ``--overlap-moe-expert-parallel-comm``, DeepSeek-V3's DualPipe
    pairing, arXiv 2412.19437 fig. 4): the forward of one micro-batch runs beside the backward of
    another, and each exchange hides only under the compute block it is paired with -- backward
    combine under forward attention, forward dispatch under backward MLP, backward dispatch under
    forward MLP, forward combine under backward attention -- slowing that block by the SMs the
    exchange holds. Dispatch and combine take half of a pass each; a recomputed forward's exchange
    is not paired. This is a paired step's exposure; warm-up and cool-down steps run unpaired
    (:func:`fabricsim.workload.pipeline.a2a_paired_share`, applied per step in :func:`step_time`)."""
    per_pass = comm_s / passes
    half = per_pass / 2.0
    mlp_forward = times.mlp_linear_s
    attention_forward = times.total_s - mlp_forward
    mlp_backward = times.backward_gemms * mlp_forward
    attention_backward = times.backward_s - mlp_backward
    paired = (attention_forward, mlp_backward, mlp_forward, attention_backward)
    exposed = sum(overlapped_s(half, compute, A2A_OVERLAP_SM_SHARE) for compute in paired)
    return exposed + (passes - 2) * per_pass


def _layer_comm_s(
    ctx: StepContext, layout: ParallelLayout, sizes: work.CommSizes, times: LayerTimes
) -> tuple[float, float]:
    """Exposed (tensor-parallel, context-parallel) seconds of one layer, forward + backward + recompute."""
    t, comm = layout.tensor_parallel, ctx.comm
    passes = 3.0 if layout.recompute is Recompute.FULL else 2.0
    if layout.sequence_parallel:
        per_pass = 2.0 * (comm.time_s(AG, sizes.tensor_bytes, t, 1) + comm.time_s(RS, sizes.tensor_bytes, t, 1))
    else:
        per_pass = 2.0 * comm.time_s(AR, sizes.tensor_bytes, t, 1)
    tp = passes * per_pass
    if ctx.options.overlap_tp_comm and t <= ctx.system.scale_up.domain_gpus:
        # Transformer Engine's userbuffers overlap needs the TP group inside one NVLink domain
        tp = overlapped_s(tp, passes * times.linear_s)
    cp_fwd = comm.time_s(AG, sizes.context_kv_bytes, layout.context_parallel, t)
    cp_bwd = cp_fwd + comm.time_s(RS, sizes.context_kv_bytes, layout.context_parallel, t)
    cp = overlapped_s(cp_fwd, times.attention_s) + overlapped_s(cp_bwd, 2.0 * times.attention_s)
    if layout.recompute is Recompute.FULL:
        cp += overlapped_s(cp_fwd, times.attention_s)
    return tp, cp


def stage_work(
    ctx: StepContext,
    layout: ParallelLayout,
    seq_len: int,
    shape: ShardShape | None = None,
    sizes: work.CommSizes | None = None,
    stages: tuple[work.StageLayers, int] | None = None,
) -> StageWork:
    """Per-micro-batch seconds of the largest stage: compute by kind and exposed TP/CP/EP collectives;
    the last stage's output layer (and multi-token prediction) counts where it makes that stage the
    slowest. ``shape``, ``sizes`` and ``stages``: :func:`shard_shape`, :func:`stage_comm_sizes` and
    :func:`pipeline_stages` of the layout when the caller has them (the analytic engine's stage entry)."""
    shape = shape or shard_shape(ctx, layout, seq_len)
    stage, last_layers = stages or pipeline_stages(ctx, layout.pipeline_parallel)
    sizes = sizes or stage_comm_sizes(ctx, layout, seq_len)
    body = body_work(ctx, layout, (seq_len, shape, stage), sizes)
    tail = _tail_work(ctx, layout, sizes, shape)
    share = 1.0
    if layout.pipeline_parallel > 1:  # the last stage: its layers plus the output layer (and MTP)
        compute = body.forward_s + body.backward_s
        tail_compute = tail.forward_s + tail.backward_s
        share = max(0.0, last_layers * compute / stage.layers + tail_compute - compute) / tail_compute
    return _sum_work([body, tail], (1.0, share))


def body_work(
    ctx: StepContext,
    layout: ParallelLayout,
    stage_of: tuple[int, ShardShape, work.StageLayers],
    sizes: work.CommSizes | None = None,
) -> StageWork:
    """Per-micro-batch seconds of the largest stage's transformer layers, ``stage_of`` = (sequence
    length, :func:`shard_shape`, the largest stage): :func:`stage_work` without the last stage's
    output layer, so no field exceeds :func:`stage_work`'s (a planner's time bound before the
    stage is sized). ``sizes`` (:func:`stage_comm_sizes`) is computed only when a layer's work is
    not cached yet."""
    seq_len, shape, stage = stage_of
    layers = []
    for count, moe in ((stage.dense_layers, False), (stage.moe_layers, True)):
        if count:
            if sizes is None and (layout.dtype, shape, moe, layout.recompute) not in ctx.layer_works:
                sizes = stage_comm_sizes(ctx, layout, seq_len)
            layers.append(_scaled(_unit_layer_work(ctx, layout, sizes, shape, moe), count))  # type: ignore[arg-type]
    return _sum_work(layers)


def pipeline_stages(ctx: StepContext, pipeline_parallel: int) -> tuple[work.StageLayers, int]:
    """(the largest stage, the last stage's transformer layers) of ``pipeline_parallel`` stages."""
    accounting = ctx.options.pipeline_accounting
    return (
        work.largest_stage(ctx.dims, pipeline_parallel, accounting),
        work.last_stage_layers(ctx.dims, pipeline_parallel, accounting),
    )


def stage_comm_sizes(ctx: StepContext, layout: ParallelLayout, seq_len: int) -> work.CommSizes:
    """The per-layer, per-micro-batch message sizes of ``layout`` (no gradient sizes)."""
    return work.comm_sizes(ctx.dims, layout, seq_len, (0.0, 0.0, 0.0), ctx.options.capacity_factor)


def _sum_work(parts: list[StageWork], weights: tuple[float, ...] | None = None) -> StageWork:
    """The weighted sum of :class:`StageWork` records, field by field (weights default to 1).

    Each field adds ``0.0 + w0·p0 + w1·p1 + ...`` left to right: the additions ``sum()`` over the
    column makes (it starts from 0 and accumulates floats in a double), written out for the one and
    two records a stage has (a hot path of the planner's stage entries)."""
    weights = weights or (1.0,) * len(parts)
    if len(parts) == 1:
        (p,), (w,) = parts, weights
        return StageWork(
            0.0 + w * p.forward_s, 0.0 + w * p.backward_s, 0.0 + w * p.recompute_s, 0.0 + w * p.tp_comm_s,
            0.0 + w * p.cp_comm_s, 0.0 + w * p.ep_comm_s, 0.0 + w * p.ep_unpaired_s,
        )
    if len(parts) == 2:
        (p, q), (v, w) = parts, weights
        return StageWork(
            0.0 + v * p.forward_s + w * q.forward_s, 0.0 + v * p.backward_s + w * q.backward_s,
            0.0 + v * p.recompute_s + w * q.recompute_s, 0.0 + v * p.tp_comm_s + w * q.tp_comm_s,
            0.0 + v * p.cp_comm_s + w * q.cp_comm_s, 0.0 + v * p.ep_comm_s + w * q.ep_comm_s,
            0.0 + v * p.ep_unpaired_s + w * q.ep_unpaired_s,
        )
    rows = [
        (w * p.forward_s, w * p.backward_s, w * p.recompute_s, w * p.tp_comm_s, w * p.cp_comm_s, w * p.ep_comm_s,
         w * p.ep_unpaired_s)
        for p, w in zip(parts, weights, strict=True)
    ]
    if not rows:
        return StageWork(0, 0, 0, 0, 0, 0, 0)
    return StageWork(*(sum(column) for column in zip(*rows, strict=True)))


def _unit_layer_work(
    ctx: StepContext, layout: ParallelLayout, sizes: work.CommSizes, shape: ShardShape, moe: bool
) -> StageWork:
    """:func:`_layer_work` of one layer, cached in the context: what it reads of the layout and of
    the message sizes follows from the shape (micro-batch, sequence, tp, cp, ep, expert TP, sequence
    parallel, capacity factor), the dtype and the recompute mode, so stages of every pipeline depth
    share it."""
    key = (layout.dtype, shape, moe, layout.recompute)
    unit = ctx.layer_works.get(key)
    if unit is None:
        unit = ctx.layer_works[key] = _layer_work(ctx, layout, sizes, shape, moe)
    return unit


def _scaled(unit: StageWork, count: float) -> StageWork:
    """``count`` layers of ``unit`` (one layer's work, its fields 1.0 x the seconds: the same products
    :func:`_layer_work` forms with ``count``)."""
    return StageWork(
        count * unit.forward_s, count * unit.backward_s, count * unit.recompute_s, count * unit.tp_comm_s,
        count * unit.cp_comm_s, count * unit.ep_comm_s, count * unit.ep_unpaired_s,
    )


def _layer_work(
    ctx: StepContext, layout: ParallelLayout, sizes: work.CommSizes, shape: ShardShape, moe: bool, count: float = 1.0
) -> StageWork:
    """Seconds of ``count`` (dense or MoE) layers for one micro-batch, by kind (a :class:`StageWork`)."""
    dims, rates = ctx.dims, ctx.rates(layout.dtype)
    times = ctx.layer_times(layout.dtype, shape, moe)
    tp_layer, cp_layer = _layer_comm_s(ctx, layout, sizes, times)
    if layout.recompute is Recompute.FULL:
        recompute = times.total_s
    else:
        modules = recompute_modules(layout.recompute, ctx.options.selective_modules)
        recompute = recompute_s(dims, rates, shape, moe, times, modules)
    ep_layer = unpaired = 0.0
    if moe:
        ep_layer = expert_comm_s(ctx, layout, sizes)
        if ctx.options.a2a_overlap and ep_layer:
            paired = paired_a2a_s(ep_layer, times, 3 if layout.recompute is Recompute.FULL else 2)
            ep_layer, unpaired = paired, ep_layer - paired
    return StageWork(
        count * times.total_s, count * times.backward_s, count * recompute, count * tp_layer, count * cp_layer,
        count * ep_layer, count * unpaired,
    )


def _tail_work(ctx: StepContext, layout: ParallelLayout, sizes: work.CommSizes, shape: ShardShape) -> StageWork:
    """Seconds of the last stage's extra work for one micro-batch: the output layer and loss, and per
    multi-token-prediction depth (DeepSeek-V3 sec. 2.2; Megatron-Core ``MultiTokenPredictionLayer``)
    two RMSNorms, the 2h -> h projection, one layer of the model's kind and the output layer and
    loss again."""
    dims, rates = ctx.dims, ctx.rates(layout.dtype)
    logits_fwd, logits_bwd = ctx.logits_times(layout.dtype, shape)
    tail = StageWork(logits_fwd, logits_bwd, 0.0, 0.0, 0.0, 0.0)
    depth = ctx.options.mtp_layers
    if not depth:
        return tail
    t = shape.tensor_parallel
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    replicated = tokens / t if shape.sequence_parallel else tokens
    projection = gemm_time_s(rates, tokens, dims.hidden / t, 2 * dims.hidden)
    norms = [memory_time_s(rates, 2.0 * LAYERNORM_BYTES[i] * replicated * dims.hidden, kernels=2.0) for i in (0, 1)]
    layer = _layer_work(ctx, layout, sizes, shape, dims.moe_layers > 0)
    extra = StageWork(
        layer.forward_s + projection + norms[0] + logits_fwd,
        layer.backward_s + (1.0 if shape.frozen_weights else 2.0) * projection + norms[1] + logits_bwd,
        layer.recompute_s, layer.tp_comm_s, layer.cp_comm_s, layer.ep_comm_s, layer.ep_unpaired_s,
    )
    return _sum_work([tail, extra], (1.0, float(depth)))


def dp_exposed_s(ctx: StepContext, layout: ParallelLayout, stage: StageWork, params: tuple[float, float]) -> float:
    """Exposed seconds of the data-parallel gradient reduction and ZeRO parameter gathers: dense
    gradients over the dp·cp ranks that share the weights (stride tp; context-parallel ranks reduce
    their gradients too, :attr:`~fabricsim.specs.ParallelLayout.data_context_parallel`), expert
    gradients over the expert-data-parallel group."""
    dp, zero = layout.data_context_parallel, layout.zero_stage
    if dp == 1 and layout.expert_data_parallel == 1:  # experts may still have replicas (folding: tp > ep x etp)
        return 0.0
    comm, stride = ctx.comm, layout.tensor_parallel
    edp, expert_stride = layout.expert_data_parallel, layout.expert_tp * layout.expert_parallel
    dense, expert = params
    grad = ctx.options.gradient_bytes(layout.dtype)
    op = AR if zero == 0 else RS
    reduce_s = comm.time_s(op, dense * grad, dp, stride) + comm.time_s(op, expert * grad, edp, expert_stride)
    gather_s = 0.0
    if zero >= 1:  # updated parameters all-gathered after the (sharded) optimizer step
        gather_s = comm.time_s(AG, dense * WEIGHT_BYTES, dp, stride)
        gather_s += comm.time_s(AG, expert * WEIGHT_BYTES, edp, expert_stride)
    if ctx.options.overlap_param_gather:  # gathered bucket by bucket under the next forward
        gather_s = overlapped_s(gather_s, stage.forward_s)
    if not ctx.options.overlap_grad_reduce:
        return reduce_s + gather_s
    # the last bucket waits for the end of backward; it holds the first stage's word embedding, whose
    # gradient comes last and which a bucket never splits (param_and_grad_buffer.py: buckets close at a
    # parameter boundary), so it is at least that large
    total = dense + expert
    last_bucket = max(grad_bucket_params(layout.data_parallel), ctx.dims.embedding_params / layout.tensor_parallel)
    tail = reduce_s * min(1.0, last_bucket / total) if total else 0.0
    return tail + overlapped_s(reduce_s - tail, stage.backward_s + stage.recompute_s) + gather_s


def zero3_exposed_s(ctx: StepContext, layout: ParallelLayout, stage: StageWork, params: tuple[float, float]) -> float:
    """ZeRO-3/FSDP: per micro-batch the weights are all-gathered for forward and for backward."""
    if layout.zero_stage < 3 or layout.data_context_parallel == 1:
        return 0.0
    gather = ctx.comm.time_s(AG, params[0] * WEIGHT_BYTES, layout.data_context_parallel, layout.tensor_parallel)
    expert_stride = layout.expert_tp * layout.expert_parallel
    gather += ctx.comm.time_s(AG, params[1] * WEIGHT_BYTES, layout.expert_data_parallel, expert_stride)
    return overlapped_s(gather, stage.forward_s) + overlapped_s(gather, stage.backward_s + stage.recompute_s)


def optimizer_s(ctx: StepContext, layout: ParallelLayout, params: tuple[float, float]) -> float:
    """Seconds of the per-step passes over parameters and gradients (HBM-bound): on the rank's
    (ZeRO) shard the clipping norm, Adam and the copy to the 16-bit weights, the fp16 unscale and the
    copy of 16-bit gradients into fp32 main gradients; on the local gradient buffer its scaling by
    1/dp and NaN check before the reduction and its zeroing for the next step
    (``transformer.constants``)."""
    dense, expert = params
    local = dense + expert
    if layout.zero_stage >= 1:
        dense /= layout.data_context_parallel
        expert /= layout.expert_data_parallel
    shard = dense + expert
    grad = ctx.options.gradient_bytes(layout.dtype)
    per_param = OPTIMIZER_SHARD_BYTES + (FP16_UNSCALE_BYTES if layout.dtype == "fp16" else 0.0)
    per_param += 0.0 if ctx.options.gradients_in_fp32(layout.dtype) else MAIN_GRAD_COPY_BYTES
    buffer = shard if layout.zero_stage >= 3 else local
    passes = 1.0 + GRAD_NAN_CHECK_PASSES + (GRAD_SCALE_PASSES if layout.data_context_parallel > 1 else 0.0)
    return (shard * per_param + buffer * grad * passes) / ctx.rates(layout.dtype).hbm_Bps


def ep_per_microbatch_s(stage: StageWork, layout: ParallelLayout, microbatches: int) -> float:
    """Exposed expert-parallel seconds per micro-batch over a step: under the A2A overlap the
    warm-up and cool-down steps run unpaired (:func:`fabricsim.workload.pipeline.a2a_paired_share`)."""
    if not stage.ep_unpaired_s:
        return stage.ep_comm_s
    paired = a2a_paired_share(layout.pipeline_parallel, layout.virtual_stages, microbatches)
    return stage.ep_comm_s + (1.0 - paired) * stage.ep_unpaired_s


def pipeline_terms(ctx: StepContext, layout: ParallelLayout, entry: StageEntry, zero3_s: float) -> tuple[float, float]:
    """(seconds of one pipeline send/recv of a micro-batch's activations, 0.0 without pipelining;
    one micro-batch's time on the slowest stage with its exposed ZeRO-3 gathers ``zero3_s``, the
    bubble's unit): the parts of :func:`step_time` that depend on neither the virtual stages nor the
    micro-batch count (the analytic engine caches them, :class:`~.results.PlacedStage`)."""
    stage = entry.work
    p2p = 0.0
    if layout.pipeline_parallel > 1:
        stride = layout.tensor_parallel * layout.context_parallel * layout.data_parallel
        p2p = ctx.comm.send_recv_s(entry.p2p_bytes, stride)
    # the bubble is made of the other stages' warm-up / cool-down steps: unpaired
    per_mb = stage.forward_s + stage.backward_s + stage.recompute_s + stage.tp_comm_s + stage.cp_comm_s
    per_mb += stage.ep_comm_s + stage.ep_unpaired_s + zero3_s
    return p2p, per_mb


def step_time(
    layout: ParallelLayout, stage: StageWork, placed: PlacedStage, microbatches: int
) -> tuple[TimeBreakdown, float]:
    """Seconds of one step by cause (module docstring) from the slowest stage's work per micro-batch
    and its :class:`~.results.PlacedStage` (its data-parallel, optimizer and pipeline terms), and
    their sum, the step time (:attr:`TimeBreakdown.total_s`'s additions in its order, made here on
    the values at hand: a hot path)."""
    m = microbatches
    pp, vpp = layout.pipeline_parallel, layout.virtual_stages
    forward, backward, recompute = m * stage.forward_s, m * stage.backward_s, m * stage.recompute_s
    tp, cp, ep = m * stage.tp_comm_s, m * stage.cp_comm_s, m * ep_per_microbatch_s(stage, layout, m)
    pipeline = m * (p2p_transfers_per_microbatch(pp, vpp) * placed.p2p_s)
    bubble = bubble_stage_times(pp, vpp) * placed.bubble_unit_s
    dp = m * placed.zero3_s + placed.dp_exposed_s
    optimizer = placed.optimizer_s
    total = forward + backward + recompute + tp + cp + ep + pipeline + bubble + dp + optimizer  # no offload: 0
    fields = (forward, backward, recompute, tp, cp, ep, pipeline, bubble, dp, optimizer, 0.0)  # offload_s: 0.0
    return new_time_breakdown(fields), total
