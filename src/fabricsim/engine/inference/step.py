"""Prefill/decode step model of one model replica on its GPUs, with its collectives (layer L5).

A replica spans ``pp x max(tp, ep)`` GPUs. Within a pipeline stage, attention runs tensor parallel
over ``tp`` GPUs and, when ``ep > tp``, data parallel over ``ep / tp`` such groups
(DeepSeek-style attention-DP + EP: each DP rank holds its own sequences and KV); routed experts are
split over all ``tp x dp`` GPUs of the stage (``ep`` groups of experts, each expert ``tp x dp / ep``
ways). One step (a micro-batch per stage when ``pp > 1``) costs, per GPU, the sum of

* linear layers: ``max(FLOPs / (peak(weight format) x GEMM efficiency), weight bytes / achieved HBM)``
  (:mod:`fabricsim.transformer.kernels`: the device's kernel-level GEMM rates for the weight
  format, tile/wave quantisation at the step's tokens per GPU);
* attention: ``max(FLOPs / (bf16 peak x fused-attention efficiency), KV bytes / achieved HBM)``
  (the device's attention-kernel benchmark; decode is bandwidth bound, MLA included), plus the
  KV-cache write of the step's new tokens, its own memory-bound kernel (:func:`kv_write_s`);
* kernel floors: :data:`KERNELS_PER_LAYER` per layer and :data:`STEP_KERNELS` per step, each
  ``KERNEL_OVERHEAD_S`` when launched eagerly; decode steps replayed as CUDA graphs (the engines'
  default, :func:`graph_captured`) keep the GEMMs' GPU-side fixed time and a small gap per other
  kernel; the attention kernel's own fixed time (``ATTENTION_KERNEL_FIXED_S``, decode-attention
  benchmarks) counts with attention, eager or not;
* communication, not overlapped with compute (as in TensorRT-LLM and vLLM decode): 2 TP all-reduces
  per dense layer (1 per MoE layer with EP), the MoE all-to-all dispatch and combine over the EP
  group, and the activation send/recv between pipeline stages, each timed on the actual fabric
  (NVLink domain or scale-out) by :mod:`fabricsim.collectives`. A decode step's small TP all-reduce
  costs ~8-15 µs on NVLink (NCCL's LL protocol; nccl-tests measure 13.7 µs for 8 B on 8 x H100, the
  model 15.0); the engines' custom all-reduce kernels reach 4-12 µs (sglang PR 2904, H100), which is
  not modelled separately.

With ``pp`` stages the batch runs as ``pp`` micro-batches in flight, so one step of the whole batch
takes ``pp x`` the time of one micro-batch on the slowest stage, the one with ``ceil(layers / pp)``
layers (plus the p2p hops). FLOPs and bytes are the whole-model ones of
:func:`fabricsim.transformer.inference.step_cost`, sharded here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fabricsim.collectives import CollectiveOp
from fabricsim.collectives.times import CollectiveTimes
from fabricsim.specs import DTYPE_BYTES, Dtype, ModelSpec, SystemSpec
from fabricsim.transformer.compute import ACTIVATION_BYTES, GELU_BYTES, SWIGLU_BYTES
from fabricsim.transformer.constants import (
    CUDA_GRAPH_KERNEL_OVERHEAD_S,
    FRAMEWORK_MEMORY_BYTES,
    KERNEL_OVERHEAD_S,
)
from fabricsim.transformer.inference import StepWork, TokenCosts, expected_distinct_experts, token_costs
from fabricsim.transformer.kernels import (
    ATTENTION_KERNEL_FIXED_S,
    KERNEL_FIXED_S,
    GemmRates,
    attention_head_factor,
    attention_rates,
    gemm_format,
    gemm_rates,
    hbm_achieved_Bps,
)
from fabricsim.transformer.kv_cache import kv_bytes_per_token_per_gpu
from fabricsim.transformer.parameters import parameter_counts
from fabricsim.workload.inference_layout import (
    INFERENCE_DTYPES,
    InferenceLayout,
    LayoutRequest,
    check_dtype,
    check_lengths,
    resolve_layout,
    validate_layout,
)

__all__ = [
    "INFERENCE_DTYPES",
    "CollectiveCall",
    "CommunicationModel",
    "InferenceLayout",
    "KvBudgetPolicy",
    "LayoutRequest",
    "StepCoefficients",
    "StepParts",
    "StepTimer",
    "TokenTerms",
    "check_dtype",
    "check_lengths",
    "kv_budget_per_gpu",
    "resolve_layout",
    "step_coefficients",
    "step_time",
    "token_terms",
    "validate_layout",
    "weight_memory_per_gpu",
]

NORM_BYTES_PER_HIDDEN = 16.0
"""HBM bytes per hidden element and token per layer of the two fused residual-add + RMSNorm kernels
(each reads the input and the residual and writes both, 16-bit: 4 x 2 B, twice per layer). Derived."""

LOGIT_BYTES = 4.0
"""Bytes per vocabulary entry and sampled token: the LM head writes 16-bit logits, the sampler reads
them (2 + 2 B). Derived."""

KERNELS_PER_LAYER = 9
"""Kernels one layer launches besides its collectives: norm, QKV GEMM, RoPE + KV write, attention,
output GEMM, add + norm, gate/up GEMM, activation, down GEMM. Each costs the shared
``KERNEL_OVERHEAD_S`` (transformer.constants) launched eagerly, less in a step that runs as a CUDA
graph (:data:`GEMM_KERNELS_PER_LAYER`); attention costs its own fixed time. Counted from
TensorRT-LLM's Llama layer. Derived."""

GEMM_KERNELS_PER_LAYER = 4
"""Of :data:`KERNELS_PER_LAYER`, the GEMMs (QKV, output, gate/up, down). Replayed in a CUDA graph
they keep their GPU-side fixed time ``KERNEL_FIXED_S`` (transformer.kernels: pipeline ramp and tail,
timed on the GPU); the attention kernel keeps its own, ``ATTENTION_KERNEL_FIXED_S``, eager or not
(it exceeds the launch cost; charged with attention); the other kernels keep only
``CUDA_GRAPH_KERNEL_OVERHEAD_S``. Derived."""

STEP_KERNELS = 5
"""Kernels a step launches once, outside its layers: embedding lookup, final norm, LM head GEMM and
the sampler's two (FlashInfer's fused top-k/top-p sampling: softmax over the logits, then the
rejection-sampling pick; the logits' bytes are :data:`LOGIT_BYTES`). Counted. Host work per step
(scheduling, stop checks, detokenising) is not charged: TensorRT-LLM's overlap scheduler (on by
default), SGLang's zero-overhead scheduler and vLLM's async scheduling run it while the GPU computes
the next step; without overlap, vLLM V0 left 5-13 ms of GPU bubble per decode step (vLLM issue 6854, its traces)."""

CUDA_GRAPH_MAX_TOKENS = 512
"""Largest decode batch (tokens per step) an engine replays as a captured CUDA graph: vLLM's default
``max_cudagraph_capture_size`` (512; larger batches run eagerly). TensorRT-LLM and vLLM capture
decode by default; prefill steps run eagerly. Sourced (vLLM CompilationConfig default)."""

# Activations (TP all-reduces, PP send/recv, workspace) are 16-bit: transformer.compute's
# ACTIVATION_BYTES; the MLP activation kernel moves its forward SWIGLU_BYTES / GELU_BYTES.

@dataclass(frozen=True, slots=True)
class WeightMemory:
    """Weight bytes held by the most loaded GPU of a replica."""

    dense_bytes: float
    expert_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.dense_bytes + self.expert_bytes


def weight_memory_per_gpu(model: ModelSpec, layout: InferenceLayout) -> WeightMemory:
    """Non-expert weights split over tp x pp (replicated over attention-DP ranks), experts over the
    stage's tp x dp GPUs; ``ceil(layers / pp)`` layers on the largest stage (bytes)."""
    counts = parameter_counts(model)
    wbytes = DTYPE_BYTES[Dtype(layout.weight_dtype)]
    experts_all = counts.num_experts * counts.expert * counts.num_moe_layers
    dense = counts.total - experts_all
    stage_share = math.ceil(model.num_hidden_layers / layout.pipeline_parallel) / model.num_hidden_layers
    return WeightMemory(
        dense_bytes=dense * wbytes * stage_share / layout.tensor_parallel,
        expert_bytes=experts_all * wbytes * stage_share / layout.stage_gpus,
    )


def activation_workspace_bytes(model: ModelSpec, layout: InferenceLayout, max_step_tokens: int) -> float:
    """Transient activations of the largest step on one GPU: hidden states, QKV and the MLP
    intermediate of ``max_step_tokens`` tokens at 16 bit (bytes)."""
    tokens = max_step_tokens / layout.attention_data_parallel
    intermediate = max(model.intermediate_size, model.expert_intermediate_size)
    width = 4 * model.hidden_size + 2 * intermediate / layout.tensor_parallel
    return tokens * width * ACTIVATION_BYTES


def kv_budget_per_gpu(model: ModelSpec, system: SystemSpec, layout: InferenceLayout,
                      budget: KvBudgetPolicy) -> float:
    """Bytes per GPU the KV cache may use: a fraction of what weights, activations and the framework
    leave free (TensorRT-LLM ``kv_cache_free_gpu_mem_fraction``, vLLM ``gpu_memory_utilization``)."""
    free = (
        system.device.hbm_capacity_bytes
        - weight_memory_per_gpu(model, layout).total_bytes
        - activation_workspace_bytes(model, layout, budget.max_step_tokens)
        - FRAMEWORK_MEMORY_BYTES
    )
    return max(0.0, free * budget.free_memory_fraction)


@dataclass(frozen=True, slots=True)
class KvBudgetPolicy:
    """How much memory the KV cache gets: ``free_memory_fraction`` of the free memory once a step of
    ``max_step_tokens`` tokens has its activations."""

    free_memory_fraction: float = 0.90
    max_step_tokens: int = 8192


@dataclass(frozen=True, slots=True)
class StepCoefficients:
    """Per-GPU, per-stage constants of the step-time formula (precomputed once per replica)."""

    costs: TokenCosts
    tp: int
    pp: int
    dp: int
    stage_gpus: int
    stage_share: float
    """Share of the layers on the slowest (largest) stage: ``ceil(layers / pp) / layers``."""
    gemm: GemmRates
    attention_peak_flops: float
    attention_efficiency: float
    """Fused-attention efficiency of the device (long-sequence causal forward, the model's head dim)."""
    hbm_Bps: float
    weight_bytes: float
    kv_bytes_per_token_gpu: float
    elementwise_bytes_per_token: float
    logit_bytes_per_token: float
    kernel_overhead_s: float
    """Kernel floors of a step launched eagerly: the stage's layers and the per-step kernels (s)."""
    graph_kernel_overhead_s: float = 0.0
    """The same in a step replayed as a CUDA graph (seconds); the LM head GEMM keeps its fixed time."""
    cuda_graphs: bool = True
    """Decode steps run as CUDA graphs (:func:`graph_captured`), as TensorRT-LLM and vLLM do by default."""
    attention_fixed_s: float = 0.0
    """Fixed GPU time of the stage's attention kernels, one per layer (``ATTENTION_KERNEL_FIXED_S``)."""
    spill_fraction: float = 0.0
    spill_Bps: float = 1.0
    spill_latency_s: float = 0.0


def stage_share(model: ModelSpec, pipeline_parallel: int) -> float:
    """Share of the model's layers on its largest pipeline stage, ``ceil(layers / pp) / layers``:
    the step runs at the pace of the slowest stage, and memory is sized for the largest."""
    return math.ceil(model.num_hidden_layers / pipeline_parallel) / model.num_hidden_layers


def step_coefficients(model: ModelSpec, system: SystemSpec, layout: InferenceLayout,
                      cuda_graphs: bool = True) -> StepCoefficients:
    """Precompute the per-GPU constants of :func:`step_time` for ``layout`` on ``system``.

    Per-layer costs (weights, KV, element-wise bytes, kernel launches) are those of the largest
    stage, ``ceil(layers / pp)`` layers (:func:`stage_share`), which every micro-batch waits for when
    ``pp`` does not divide the layers (Llama 3.1 405B: 126 layers, pp 4 -> 32 on the slowest stage).
    ``cuda_graphs``: decode steps replay a captured graph (the engines' default) or launch eagerly.
    """
    tp = layout.tensor_parallel
    share = stage_share(model, layout.pipeline_parallel)
    attention = attention_rates(system.device, sustained=True)  # serving keeps the GPU at its power limit
    return StepCoefficients(
        costs=token_costs(model),
        tp=tp,
        pp=layout.pipeline_parallel,
        dp=layout.attention_data_parallel,
        stage_gpus=layout.stage_gpus,
        stage_share=share,
        gemm=gemm_rates(system.device, gemm_format(layout.weight_dtype), sustained=True),
        attention_peak_flops=attention.peak,
        attention_efficiency=attention.forward_fraction * attention_head_factor(model.head_size),
        hbm_Bps=hbm_achieved_Bps(system.device),
        weight_bytes=DTYPE_BYTES[Dtype(layout.weight_dtype)],
        kv_bytes_per_token_gpu=kv_bytes_per_token_per_gpu(model, layout.kv_dtype, tp, 1) * share,
        elementwise_bytes_per_token=_elementwise_bytes_per_token(model, layout) * share,
        logit_bytes_per_token=model.vocab_size / tp * LOGIT_BYTES,
        kernel_overhead_s=(model.num_hidden_layers * share * (KERNELS_PER_LAYER - 1) + STEP_KERNELS)
        * KERNEL_OVERHEAD_S,
        graph_kernel_overhead_s=model.num_hidden_layers * share * graph_kernel_floor_s()
        + KERNEL_FIXED_S + (STEP_KERNELS - 1) * CUDA_GRAPH_KERNEL_OVERHEAD_S,
        cuda_graphs=cuda_graphs,
        attention_fixed_s=model.num_hidden_layers * share * ATTENTION_KERNEL_FIXED_S,
    )


def graph_kernel_floor_s() -> float:
    """Kernel floors of one layer in a step replayed as a CUDA graph (seconds): the GEMMs' GPU-side
    fixed time plus the inter-kernel gap of the other kernels (:data:`GEMM_KERNELS_PER_LAYER`)."""
    others = KERNELS_PER_LAYER - GEMM_KERNELS_PER_LAYER - 1  # the attention kernel: attention_fixed_s
    return GEMM_KERNELS_PER_LAYER * KERNEL_FIXED_S + others * CUDA_GRAPH_KERNEL_OVERHEAD_S


def _elementwise_bytes_per_token(model: ModelSpec, layout: InferenceLayout) -> float:
    """Element-wise HBM bytes per token on one GPU for all layers: norms (not TP-split) and the MLP
    activation (TP-split; for MoE layers the top-k experts' intermediates, split over the stage)."""
    norms = NORM_BYTES_PER_HIDDEN * model.hidden_size * model.num_hidden_layers
    act = SWIGLU_BYTES[0] if model.gated_mlp else GELU_BYTES[0]
    dense_mlp = act * model.intermediate_size / layout.tensor_parallel * model.num_dense_layers
    experts = model.num_experts_per_tok + model.n_shared_experts
    moe_mlp = act * model.expert_intermediate_size * experts * model.num_moe_layers / layout.stage_gpus
    return norms + dense_mlp + moe_mlp


@dataclass(frozen=True, slots=True)
class StepParts:
    """Seconds of one stage's step on one GPU, by kind."""

    linear_s: float
    attention_s: float
    communication_s: float

    @property
    def total_s(self) -> float:
        return self.linear_s + self.attention_s + self.communication_s


@dataclass(frozen=True, slots=True)
class TokenTerms:
    """The parts of a micro-batch's compute time that depend on its token count only (a GPU of the
    slowest stage): what :class:`StepTimer` keeps per token count, the rest of the formula being
    linear in the step's pairs, logits and KV tokens."""

    layer_flops: float
    """Whole-model FLOPs of the stage's share of the layers' matmuls (before the split over GPUs)."""
    gemm_Fps: float
    """FLOP/s the GEMMs sustain at this token count: peak x efficiency."""
    weight_s: float
    """Seconds to stream the weights the step touches (dense + the expected distinct experts)."""
    elementwise_bytes: float
    """Element-wise bytes per GPU (norms, MLP activation) of the tokens."""
    kv_write_s: float
    """Seconds of the KV-cache write of the tokens (:func:`kv_write_s`)."""
    kernel_s: float
    """Kernel launch floors of the step without CUDA graphs (:data:`KERNELS_PER_LAYER` per layer but
    the attention kernel, whose fixed time is ``attention_fixed_s``, and :data:`STEP_KERNELS`)."""
    graph_kernel_s: float
    """The same under CUDA graphs (:func:`graph_captured` steps)."""


def kv_write_s(tokens: float, kv_bytes_per_token: float, hbm_Bps: float) -> float:
    """Seconds of the KV-cache write of ``tokens`` new tokens on one GPU: ``tokens x bytes`` (K and V
    of every layer of the stage at the KV dtype, ``kv_bytes_per_token``) at achieved HBM bandwidth.

    The write is its own memory-bound kernel (TensorRT-LLM's fused QKV preprocessing -- RoPE + KV
    write, vLLM's ``reshape_and_cache``), before attention reads the cache, so it adds to the step in
    prefill as in decode instead of hiding under a compute-bound attention kernel. Llama 3 8B: 4,096 B
    per token and layer at 16 bit: ~2.3 ns on an A100 (1.79 TB/s achieved), ~1.4 ns on an H100. Derived."""
    return tokens * kv_bytes_per_token / hbm_Bps


def graph_captured(c: StepCoefficients, micro: StepWork) -> bool:
    """Does this step run as a CUDA graph? Decode-only steps of at most
    :data:`CUDA_GRAPH_MAX_TOKENS` tokens when the engine uses graphs (prefill runs eagerly)."""
    return c.cuda_graphs and micro.prefill_pairs == 0.0 and micro.tokens <= CUDA_GRAPH_MAX_TOKENS


def token_terms(c: StepCoefficients, tokens: float) -> TokenTerms:
    """:class:`TokenTerms` of a micro-batch of ``tokens`` tokens (whole replica)."""
    costs = c.costs
    rank_tokens = tokens / c.dp
    efficiency = c.gemm.efficiency(max(rank_tokens, 1.0), costs.hidden_size / c.tp, costs.hidden_size)
    experts = expected_distinct_experts(costs.num_experts, costs.experts_per_token, tokens)
    expert_elements = experts * costs.num_moe_layers * costs.expert_weight_elements
    weight_elements = costs.dense_weight_elements / c.tp + expert_elements / c.stage_gpus
    weight_bytes = weight_elements * c.weight_bytes * c.stage_share
    return TokenTerms(
        layer_flops=tokens * (costs.dense_flops_per_token + costs.expert_flops_per_token) * c.stage_share,
        gemm_Fps=c.gemm.peak * efficiency,
        weight_s=weight_bytes / c.hbm_Bps,
        elementwise_bytes=rank_tokens * c.elementwise_bytes_per_token,
        kv_write_s=kv_write_s(rank_tokens, c.kv_bytes_per_token_gpu, c.hbm_Bps),
        kernel_s=c.kernel_overhead_s,
        graph_kernel_s=c.graph_kernel_overhead_s,
    )


def compute_parts(c: StepCoefficients, micro: StepWork, terms: TokenTerms | None = None) -> tuple[float, float]:
    """(linear_s, attention_s) of one micro-batch ``micro`` (whole replica) on one GPU of the
    slowest stage: the whole-model FLOPs and elements of
    :func:`fabricsim.transformer.inference.step_cost`, the layers' share ``c.stage_share`` of them,
    split over the stage's ``tp x dp`` GPUs (non-expert weights over ``tp`` only: attention-DP ranks
    hold copies; the LM head on the last stage). ``terms``: :func:`token_terms` of ``micro.tokens``
    when the caller keeps them."""
    t = token_terms(c, micro.tokens) if terms is None else terms
    return linear_part(c, micro, t), attention_part(c, micro, t)


def linear_part(c: StepCoefficients, micro: StepWork, t: TokenTerms) -> float:
    """linear_s of :func:`compute_parts`: GEMMs (LM head included), element-wise bytes, kernel
    floors; it depends on the micro-batch's tokens, logits tokens and whether it is a graph."""
    flops = (t.layer_flops + micro.logits_tokens * c.costs.lm_head_flops_per_token) / c.stage_gpus
    kernels = t.graph_kernel_s if graph_captured(c, micro) else t.kernel_s
    return max(flops / t.gemm_Fps, t.weight_s) + (
        t.elementwise_bytes + micro.logits_tokens / c.dp * c.logit_bytes_per_token
    ) / c.hbm_Bps + kernels


def attention_part(c: StepCoefficients, micro: StepWork, t: TokenTerms) -> float:
    """attention_s of :func:`compute_parts`: the fused attention kernel (compute or KV reads, plus
    its fixed time per layer) and the KV-cache write of the new tokens."""
    return _attention_s(c, micro.tokens, micro.kv_tokens_read, micro.prefill_pairs, micro.decode_pairs, t)


def _attention_s(c: StepCoefficients, tokens: float, kv_tokens_read: float, prefill_pairs: float,
                 decode_pairs: float, t: TokenTerms) -> float:
    # attention reads the cached context and the new tokens' K/V; their write is t.kv_write_s
    kv_bytes = (kv_tokens_read + tokens) / c.dp * c.kv_bytes_per_token_gpu
    memory_s = (1.0 - c.spill_fraction) * kv_bytes / c.hbm_Bps
    if c.spill_fraction > 0.0:  # spilled KV streams over its link, overlapped with the HBM part
        memory_s = max(memory_s, c.spill_fraction * kv_bytes / c.spill_Bps + c.spill_latency_s)
    attention_flops = (
        prefill_pairs * c.costs.prefill_attention_flops_per_pair
        + decode_pairs * c.costs.decode_attention_flops_per_pair
    ) * c.stage_share / c.stage_gpus
    return max(attention_flops / (c.attention_peak_flops * c.attention_efficiency), memory_s) + (
        c.attention_fixed_s + t.kv_write_s)


@dataclass(frozen=True, slots=True)
class CollectiveCall:
    """``count`` back-to-back ``op``s of ``size_bytes`` (nccl-tests S) over ``ranks`` adjacent GPUs,
    ``time_s`` seconds each on the uncontended fabric (a stage's share of one micro-batch)."""

    op: CollectiveOp
    size_bytes: float
    ranks: int
    count: float
    time_s: float


@dataclass
class CommunicationModel:
    """Seconds of a stage's collectives for a micro-batch of ``tokens`` tokens, timed (and memoised
    per distinct collective, which the serving simulation asks for again and again) by a
    :class:`fabricsim.collectives.times.CollectiveTimes` of the system."""

    system: SystemSpec
    layout: InferenceLayout
    model: ModelSpec
    _times: CollectiveTimes = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._times = CollectiveTimes(self.system)

    def time_s(self, tokens: float) -> float:
        """TP all-reduces and MoE all-to-alls of the slowest stage, ``ceil(layers / pp)`` layers."""
        total = 0.0
        for call in self.calls(tokens):
            total += call.count * call.time_s
        return total

    def calls(self, tokens: float) -> tuple[CollectiveCall, ...]:
        """The collectives behind :meth:`time_s`: 2 TP all-reduces per dense layer and 1 per MoE
        layer (with EP), a dispatch and a combine all-to-all over the EP group per MoE layer."""
        layout, model = self.layout, self.model
        if tokens <= 0:
            return ()
        tokens = math.ceil(tokens)
        dp, tp, ep = layout.attention_data_parallel, layout.tensor_parallel, layout.expert_parallel
        hidden_bytes = math.ceil(tokens / dp) * model.hidden_size * ACTIVATION_BYTES
        layers = math.ceil(model.num_hidden_layers / layout.pipeline_parallel)
        moe_layers = layers * model.num_moe_layers / model.num_hidden_layers if ep > 1 else 0.0
        out = []
        if tp > 1:
            all_reduce = self._times.time_s(CollectiveOp.ALL_REDUCE, hidden_bytes, tp, 1)
            out.append(CollectiveCall(CollectiveOp.ALL_REDUCE, hidden_bytes, tp, 2.0 * layers - moe_layers, all_reduce))
        if moe_layers:
            routed = math.ceil(tokens / layout.stage_gpus) * model.num_experts_per_tok * model.hidden_size
            a2a = self._times.time_s(CollectiveOp.ALL_TO_ALL, routed * ACTIVATION_BYTES, ep, 1)
            out.append(CollectiveCall(CollectiveOp.ALL_TO_ALL, routed * ACTIVATION_BYTES, ep, 2.0 * moe_layers, a2a))
        return tuple(out)

    def p2p_s(self, tokens: float) -> float:
        """Send/recv of the micro-batch's hidden states to the next stage (seconds)."""
        if self.layout.pipeline_parallel == 1 or tokens <= 0:
            return 0.0
        return self._times.send_recv_s(self.p2p_bytes(tokens), self.layout.stage_gpus)

    def p2p_bytes(self, tokens: float) -> float:
        """Bytes of one stage-to-stage send of a micro-batch's hidden states (per attention-DP rank)."""
        return math.ceil(tokens) * self.model.hidden_size * ACTIVATION_BYTES / self.layout.attention_data_parallel


def step_time(c: StepCoefficients, comm: CommunicationModel, work: StepWork) -> StepParts:
    """Seconds one step of the whole replica's ``work`` takes: ``pp`` micro-batches each pass every
    stage, so the step is ``pp x`` the slowest stage's time for ``work / pp`` plus a p2p hop per
    stage."""
    pp = c.pp
    micro = StepWork(
        tokens=work.tokens / pp, prefill_pairs=work.prefill_pairs / pp, decode_pairs=work.decode_pairs / pp,
        logits_tokens=work.logits_tokens / pp, kv_tokens_read=work.kv_tokens_read / pp,
    )
    linear_s, attention_s = compute_parts(c, micro)
    communication_s = comm.time_s(micro.tokens) + comm.p2p_s(micro.tokens)
    return StepParts(pp * linear_s, pp * attention_s, pp * communication_s)


LINEAR_TABLE_MAX = 1 << 18
"""Most (tokens, logits tokens, graph) entries a :class:`StepTimer` keeps (~40 MB); then it starts
over. 100,000 Llama 3 8B requests fill ~55,000 per replica."""


class StepTimer:
    """``step_time(c, comm, work).total_s`` of one replica, fast: the :class:`TokenTerms` and the
    collectives of a micro-batch depend on its token count only, which never exceeds the scheduler's
    token budget, so they are computed once per distinct count and kept, and so is the linear part
    per (tokens, logits tokens, graph or not); the attention part stays the linear formula of
    :func:`attention_part`. Same operations in the same order as :func:`step_time`, so the same
    floats. State: the two tables (no I/O)."""

    __slots__ = ("_c", "_comm", "_linear", "_table")

    def __init__(self, c: StepCoefficients, comm: CommunicationModel) -> None:
        self._c, self._comm = c, comm
        self._table: dict[float, tuple[TokenTerms, float]] = {}
        self._linear: dict[tuple[float, float, bool], float] = {}

    def __call__(self, work: StepWork) -> float:
        c, pp = self._c, self._c.pp
        micro = work if pp == 1 else StepWork(
            tokens=work.tokens / pp, prefill_pairs=work.prefill_pairs / pp, decode_pairs=work.decode_pairs / pp,
            logits_tokens=work.logits_tokens / pp, kv_tokens_read=work.kv_tokens_read / pp,
        )
        entry = self._table.get(micro.tokens)
        if entry is None:
            comm = self._comm
            entry = (token_terms(c, micro.tokens), comm.time_s(micro.tokens) + comm.p2p_s(micro.tokens))
            self._table[micro.tokens] = entry
        key = (micro.tokens, micro.logits_tokens, micro.prefill_pairs == 0.0)
        linear_s = self._linear.get(key)
        if linear_s is None:
            if len(self._linear) >= LINEAR_TABLE_MAX:  # bounded memory; the values are exact either way
                self._linear.clear()
            linear_s = self._linear[key] = linear_part(c, micro, entry[0])
        return pp * linear_s + pp * attention_part(c, micro, entry[0]) + pp * entry[1]

    def decode_s(self, sequences: int, context: int) -> float:
        """The time of a decode-only step, ``self(StepWork(sequences, 0, context, sequences,
        context))`` without building the work (the serving loop's most frequent call; same floats)."""
        c = self._c
        if c.pp != 1:
            return self(StepWork(tokens=sequences, prefill_pairs=0, decode_pairs=context, logits_tokens=sequences,
                                 kv_tokens_read=context))
        entry = self._table.get(sequences)
        key = (sequences, sequences, True)
        linear_s = self._linear.get(key) if entry is not None else None
        if linear_s is None:  # the first step of this size: the general path fills both tables
            return self(StepWork(tokens=sequences, prefill_pairs=0, decode_pairs=context, logits_tokens=sequences,
                                 kv_tokens_read=context))
        return linear_s + _attention_s(c, sequences, context, 0, context, entry[0]) + entry[1]
