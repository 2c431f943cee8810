"""Prefill/decode step model of one model replica on its GPUs, with its collectives (layer L5).

A replica spans ``pp x max(tp, ep)`` GPUs. Within a pipeline stage, attention runs tensor parallel
over ``tp`` GPUs and, when ``ep > tp``, data parallel over ``ep / tp`` such groups
(DeepSeek-style attention-DP + EP: each DP rank holds its own sequences and KV); routed experts are
split over all ``tp x dp`` GPUs of the stage (``ep`` groups of experts, each expert ``tp x dp / ep``
ways). One step (a micro-batch per stage when ``pp > 1``) costs, per GPU, the sum of

* linear layers: ``max(FLOPs / (peak(weight dtype) x gemm_efficiency), weight bytes / usable HBM)``
  (:mod:`fabricsim.transformer.compute`'s roofline and GEMM efficiency);
* attention: ``max(FLOPs / (bf16 peak x FLASH_ATTENTION_PEAK_FRACTION), KV bytes / usable HBM)``;
* communication, not overlapped with compute (as in TensorRT-LLM and vLLM decode): 2 TP all-reduces
  per dense layer (1 per MoE layer with EP), the MoE all-to-all dispatch and combine over the EP
  group, and the activation send/recv between pipeline stages, each timed on the actual fabric
  (NVLink domain or scale-out) by :mod:`fabricsim.collectives`.

With ``pp`` stages the batch runs as ``pp`` micro-batches in flight, so one step of the whole batch
takes ``pp x`` the stage time of one micro-batch (plus the p2p hops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fabricsim import collectives
from fabricsim.specs import DTYPE_BYTES, Dtype, ModelSpec, SystemSpec
from fabricsim.transformer.compute import gemm_efficiency
from fabricsim.transformer.constants import (
    FLASH_ATTENTION_PEAK_FRACTION,
    FRAMEWORK_MEMORY_BYTES,
    HBM_FRACTION,
    KERNEL_OVERHEAD_S,
)
from fabricsim.transformer.inference import StepWork, TokenCosts, expected_distinct_experts, token_costs
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
    "CommunicationModel",
    "InferenceLayout",
    "KvBudgetPolicy",
    "LayoutRequest",
    "StepCoefficients",
    "StepParts",
    "check_dtype",
    "check_lengths",
    "collective_time_s",
    "kv_budget_per_gpu",
    "resolve_layout",
    "step_coefficients",
    "step_time",
    "validate_layout",
    "weight_memory_per_gpu",
]

ACTIVATION_BYTES = 2.0
"""Bytes per activation element exchanged by TP all-reduces and PP send/recv (bf16)."""

NORM_BYTES_PER_HIDDEN = 16.0
"""HBM bytes per hidden element and token per layer of the two fused residual-add + RMSNorm kernels
(each reads the input and the residual and writes both, 16-bit: 4 x 2 B, twice per layer). Derived."""

GATED_ACTIVATION_BYTES = 6.0
"""Bytes per MLP intermediate element and token of SwiGLU (read gate and up, write product, 16-bit);
the same constant as the training model's ``SWIGLU_BYTES`` (transformer.compute). Derived."""

LOGIT_BYTES = 4.0
"""Bytes per vocabulary entry and sampled token: the LM head writes 16-bit logits, the sampler reads
them (2 + 2 B). Derived."""

KERNELS_PER_LAYER = 9
"""Kernels one layer launches besides its collectives: norm, QKV GEMM, RoPE + KV write, attention,
output GEMM, add + norm, gate/up GEMM, activation, down GEMM. Each costs the shared
``KERNEL_OVERHEAD_S`` (transformer.constants). Counted from TensorRT-LLM's Llama layer. Derived."""



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
    layers_per_stage: float
    gemm_peak_flops: float
    attention_peak_flops: float
    hbm_Bps: float
    weight_bytes: float
    kv_bytes_per_token_gpu: float
    dense_weight_bytes_gpu: float
    expert_bytes_per_expert_gpu: float
    elementwise_bytes_per_token: float
    logit_bytes_per_token: float
    kernel_overhead_s: float
    spill_fraction: float = 0.0
    spill_Bps: float = 1.0
    spill_latency_s: float = 0.0


def step_coefficients(model: ModelSpec, system: SystemSpec, layout: InferenceLayout) -> StepCoefficients:
    """Precompute the per-GPU constants of :func:`stage_time_s` for ``layout`` on ``system``."""
    costs = token_costs(model)
    wbytes = DTYPE_BYTES[Dtype(layout.weight_dtype)]
    pp, tp = layout.pipeline_parallel, layout.tensor_parallel
    stage_share = 1.0 / pp
    return StepCoefficients(
        costs=costs,
        tp=tp,
        pp=pp,
        dp=layout.attention_data_parallel,
        stage_gpus=layout.stage_gpus,
        layers_per_stage=model.num_hidden_layers / pp,
        gemm_peak_flops=system.device.peak(layout.weight_dtype),
        attention_peak_flops=system.device.peak("bf16"),
        hbm_Bps=system.device.hbm_bandwidth_Bps * HBM_FRACTION,
        weight_bytes=wbytes,
        kv_bytes_per_token_gpu=kv_bytes_per_token_per_gpu(model, layout.kv_dtype, tp, 1) * stage_share,
        dense_weight_bytes_gpu=costs.dense_weight_elements * wbytes * stage_share / tp,
        expert_bytes_per_expert_gpu=costs.expert_weight_elements * costs.num_moe_layers * wbytes
        * stage_share / layout.stage_gpus,
        elementwise_bytes_per_token=_elementwise_bytes_per_token(model, layout) * stage_share,
        logit_bytes_per_token=model.vocab_size / tp * LOGIT_BYTES,
        kernel_overhead_s=model.num_hidden_layers * stage_share * KERNELS_PER_LAYER * KERNEL_OVERHEAD_S,
    )


def _elementwise_bytes_per_token(model: ModelSpec, layout: InferenceLayout) -> float:
    """Element-wise HBM bytes per token on one GPU for all layers: norms (not TP-split) and the MLP
    activation (TP-split; for MoE layers the top-k experts' intermediates, split over the stage)."""
    norms = NORM_BYTES_PER_HIDDEN * model.hidden_size * model.num_hidden_layers
    act = GATED_ACTIVATION_BYTES if model.gated_mlp else 2 * ACTIVATION_BYTES
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


def compute_parts(c: StepCoefficients, tokens: float, attention_flops: float, kv_tokens: float,
                  logits_tokens: float) -> tuple[float, float]:
    """(linear_s, attention_s) of one micro-batch on one GPU of one stage.

    ``tokens`` new tokens and ``logits_tokens`` needing logits in the micro-batch (whole replica),
    ``attention_flops`` the whole-model attention FLOPs, ``kv_tokens`` the KV tokens read + written.
    """
    costs = c.costs
    rank_tokens = tokens / c.dp
    flops = (
        rank_tokens * costs.dense_flops_per_token / c.tp
        + tokens * costs.expert_flops_per_token / c.stage_gpus
        + logits_tokens / c.dp * costs.lm_head_flops_per_token / c.tp * c.pp
    ) / c.pp
    efficiency = gemm_efficiency(max(rank_tokens, 1.0), costs.hidden_size / c.tp, costs.hidden_size)
    experts = expected_distinct_experts(costs.num_experts, costs.experts_per_token, tokens)
    weight_bytes = c.dense_weight_bytes_gpu + experts * c.expert_bytes_per_expert_gpu
    linear_s = max(flops / (c.gemm_peak_flops * efficiency), weight_bytes / c.hbm_Bps) + (
        rank_tokens * c.elementwise_bytes_per_token + logits_tokens / c.dp * c.logit_bytes_per_token
    ) / c.hbm_Bps + c.kernel_overhead_s
    kv_bytes = kv_tokens / c.dp * c.kv_bytes_per_token_gpu
    memory_s = (1.0 - c.spill_fraction) * kv_bytes / c.hbm_Bps
    if c.spill_fraction > 0.0:  # spilled KV streams over its link, overlapped with the HBM part
        memory_s = max(memory_s, c.spill_fraction * kv_bytes / c.spill_Bps + c.spill_latency_s)
    attention_s = max(
        attention_flops / (c.dp * c.tp * c.pp) / (c.attention_peak_flops * FLASH_ATTENTION_PEAK_FRACTION), memory_s
    )
    return linear_s, attention_s


@dataclass
class CommunicationModel:
    """Seconds of a stage's collectives for a micro-batch of ``tokens`` tokens; memoised per token
    count because the serving simulation asks for the same sizes again and again."""

    system: SystemSpec
    layout: InferenceLayout
    model: ModelSpec
    _cache: dict[int, float] = field(default_factory=dict)

    def time_s(self, tokens: float) -> float:
        key = math.ceil(tokens)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._compute(key)
            self._cache[key] = cached
        return cached

    def _compute(self, tokens: int) -> float:
        layout, model = self.layout, self.model
        if tokens <= 0:
            return 0.0
        dp, tp, ep = layout.attention_data_parallel, layout.tensor_parallel, layout.expert_parallel
        rank_tokens = math.ceil(tokens / dp)
        hidden_bytes = rank_tokens * model.hidden_size * ACTIVATION_BYTES
        layers = model.num_hidden_layers / layout.pipeline_parallel
        moe_share = model.num_moe_layers / model.num_hidden_layers
        moe_layers = layers * moe_share if ep > 1 else 0.0
        total = 0.0
        if tp > 1:
            all_reduce = collective_time_s(self.system, "all-reduce", hidden_bytes, tp)
            total += all_reduce * (2.0 * layers - moe_layers)
        if moe_layers:
            routed = math.ceil(tokens / layout.stage_gpus) * model.num_experts_per_tok * model.hidden_size
            a2a = collective_time_s(self.system, "all-to-all", routed * ACTIVATION_BYTES, ep)
            total += 2.0 * a2a * moe_layers
        return total

    def p2p_s(self, tokens: float) -> float:
        """Send/recv of the micro-batch's hidden states to the next stage (seconds)."""
        if self.layout.pipeline_parallel == 1 or tokens <= 0:
            return 0.0
        size = math.ceil(tokens) * self.model.hidden_size * ACTIVATION_BYTES / self.layout.attention_data_parallel
        return collective_time_s(self.system, "send-recv", size, 2, self.layout.stage_gpus)


def step_time(c: StepCoefficients, comm: CommunicationModel, work: StepWork) -> StepParts:
    """Seconds one step of the whole replica's ``work`` takes: ``pp`` micro-batches each pass every
    stage, so the step is ``pp x`` a stage's time for ``work / pp`` plus a p2p hop per stage."""
    pp = c.pp
    tokens = work.tokens / pp
    attention_flops = (
        work.prefill_pairs * c.costs.prefill_attention_flops_per_pair
        + work.decode_pairs * c.costs.decode_attention_flops_per_pair
    ) / pp
    kv_tokens = (work.kv_tokens_read + work.tokens) / pp
    linear_s, attention_s = compute_parts(c, tokens, attention_flops, kv_tokens, work.logits_tokens / pp)
    communication_s = comm.time_s(tokens) + comm.p2p_s(tokens)
    return StepParts(pp * linear_s, pp * attention_s, pp * communication_s)


def collective_time_s(system: SystemSpec, op: str, size_bytes: float, ranks: int, stride: int = 1) -> float:
    """Adapter to :mod:`fabricsim.collectives`: seconds of ``op`` (nccl-tests size definition) over
    ``ranks`` GPUs taken every ``stride``-th GPU of ``system`` (NVLink domain or scale-out)."""
    if ranks < 2 or size_bytes <= 0:
        return 0.0
    group = collectives.place_group(system, ranks, stride)
    operation = collectives.parse_op(op)
    return float(collectives.estimate(operation, math.ceil(size_bytes), group, collectives.Algorithm.AUTO).time_s)
