"""Compute-time model of one transformer layer on one GPU: roofline + GEMM efficiency (layer L4).

Each GEMM takes ``max(FLOPs / (peak x efficiency), bytes / HBM bandwidth) + kernel overhead``
(a roofline per op). The efficiency of a GEMM of shape (m, n, k) is
``GEMM_PEAK_FRACTION x Π_d d / (d + GEMM_HALF_DIM)`` over its three dimensions, so the thin GEMMs
that high tensor parallelism produces (k = h / tp) run less efficiently than big ones. Element-wise
kernels (LayerNorm, bias-dropout-add, GeLU/SwiGLU, softmax) are bandwidth bound: bytes moved /
(HBM bandwidth x ``HBM_FRACTION``). Attention is either *flash* (one fused kernel; no s x s matrix
in HBM; causal blocks skipped; ``FLASH_ATTENTION_PEAK_FRACTION`` of peak) or *unfused* (two batched
GEMMs and a fused scale-mask-softmax + dropout over the s x s score matrix in HBM, as Megatron-LM
ran in 2021-22). FP8 applies to the linear-layer GEMMs only; attention and element-wise kernels
run in 16-bit. Backward: every GEMM becomes two (data and weight gradient) -> 2x; flash attention's
backward runs 5 matmuls for the forward's 2 -> 2.5x (Dao 2023, sec. 3.1.2); element-wise kernels
are charged the bytes their gradient kernels move (listed below), about 1.2-1.5x the forward's.

Constants: :mod:`fabricsim.transformer.constants`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.specs import DeviceSpec
from fabricsim.transformer.constants import (
    FLASH_ATTENTION_PEAK_FRACTION,
    GEMM_HALF_DIM,
    GEMM_PEAK_FRACTION,
    HBM_FRACTION,
    KERNEL_OVERHEAD_S,
)
from fabricsim.transformer.flops import ModelDims
from fabricsim.transformer.moe import expert_shard

ACTIVATION_BYTES = 2.0  # 16-bit activations (bf16/fp16), also under FP8 recipes
# Bytes per element moved by the element-wise kernels of one layer: (forward, backward).
LAYERNORM_BYTES = (4.0, 6.0)  # fwd read x, write y; bwd read x and dy, write dx (x2 per layer)
BIAS_DROPOUT_ADD_BYTES = (7.0, 5.0)  # fwd read input and residual, write output and 1-byte mask; bwd dy, mask -> dx
GELU_BYTES = (4.0, 6.0)  # fwd read + write the 4h intermediate; bwd read x and dy, write dx
SWIGLU_BYTES = (6.0, 10.0)  # fwd read gate and up, write product; bwd read gate, up, dy, write two grads
SOFTMAX_DROPOUT_BYTES = (9.0, 11.0)  # scale-mask-softmax + dropout: fwd r/w + mask; bwd dropout (5) + softmax (6)
CROSS_ENTROPY_BYTES = (10.0, 6.0)  # fwd read 16-bit logits, write and read fp32 softmax; bwd read softmax, write grad
FLASH_BACKWARD_FACTOR = 2.5  # backward matmuls over forward matmuls of fused attention


@dataclass(frozen=True, slots=True)
class DeviceRates:
    """Throughputs of one GPU for a training dtype (FLOP/s and bytes/s)."""

    gemm_peak_flops: float
    attention_peak_flops: float
    hbm_Bps: float
    gemm_operand_bytes: float


def device_rates(device: DeviceSpec, dtype: str, recipe: str | None = None) -> DeviceRates:
    """Peaks for ``dtype`` GEMMs (FP8 only for GEMMs; attention stays 16-bit) and usable HBM B/s.

    ``recipe`` (delayed | current | block | mxfp8, Megatron-Core's ``--fp8-recipe``; None = delayed) is the hook
    for recipe-specific kernel costs (scaling granularity, quantise/amax kernels); this model does
    not price recipes differently yet, so every recipe gets the same rates.
    """
    del recipe  # hook: recipe costs belong to the kernel-level compute model
    gemm_bytes = 1.0 if dtype == "fp8" else 2.0
    return DeviceRates(
        gemm_peak_flops=device.peak(dtype),
        attention_peak_flops=device.peak("bf16"),
        hbm_Bps=device.hbm_bandwidth_Bps * HBM_FRACTION,
        gemm_operand_bytes=gemm_bytes,
    )


def gemm_efficiency(m: float, n: float, k: float) -> float:
    """Fraction of peak a GEMM of shape (m x k)·(k x n) sustains (see module docstring)."""
    half = GEMM_HALF_DIM
    return GEMM_PEAK_FRACTION * (m / (m + half)) * (n / (n + half)) * (k / (k + half))


def gemm_time_s(rates: DeviceRates, m: float, n: float, k: float, count: float = 1.0) -> float:
    """Seconds for ``count`` GEMMs of shape (m, n, k): roofline of FLOPs and operand bytes."""
    if m <= 0 or n <= 0 or k <= 0 or count <= 0:
        return 0.0
    flops_s = 2.0 * m * n * k / (rates.gemm_peak_flops * gemm_efficiency(m, n, k))
    bytes_s = (m * k + k * n) * rates.gemm_operand_bytes + m * n * ACTIVATION_BYTES
    return count * (max(flops_s, bytes_s / rates.hbm_Bps) + KERNEL_OVERHEAD_S)


def memory_time_s(rates: DeviceRates, bytes_moved: float, kernels: float = 1.0) -> float:
    """Seconds for bandwidth-bound kernels moving ``bytes_moved`` bytes in total."""
    return bytes_moved / rates.hbm_Bps + kernels * KERNEL_OVERHEAD_S


@dataclass(frozen=True, slots=True)
class ShardShape:
    """What one GPU computes of one layer for one micro-batch."""

    micro_batch: int
    seq_len: int
    tensor_parallel: int
    context_parallel: int
    expert_parallel: int
    sequence_parallel: bool
    flash_attention: bool
    expert_tensor_parallel: int = 0  # 0: the tensor-parallel size (Megatron-Core's default)
    capacity_factor: float = 1.0  # expert load over the mean (padded to capacity); 1 = dropless, balanced


@dataclass(frozen=True, slots=True)
class LayerTimes:
    """Seconds of one layer on one GPU for one micro-batch, by kind of work (forward unless named)."""

    linear_s: float
    attention_s: float
    elementwise_s: float
    attention_backward_s: float
    elementwise_backward_s: float

    @property
    def total_s(self) -> float:
        """Forward seconds."""
        return self.linear_s + self.attention_s + self.elementwise_s

    @property
    def backward_s(self) -> float:
        return 2.0 * self.linear_s + self.attention_backward_s + self.elementwise_backward_s


def _attention_linear_s(dims: ModelDims, rates: DeviceRates, shape: ShardShape, tokens: float) -> float:
    t = shape.tensor_parallel
    out_k = dims.heads * dims.v_head_dim
    in_params = dims.attention_params - out_k * dims.hidden
    return gemm_time_s(rates, tokens, in_params / dims.hidden / t, dims.hidden) + gemm_time_s(
        rates, tokens, dims.hidden, out_k / t
    )


def _mlp_linear_s(dims: ModelDims, rates: DeviceRates, shape: ShardShape, tokens: float, moe: bool) -> float:
    t = shape.tensor_parallel
    up = 2 if dims.gated else 1
    if not moe:
        return gemm_time_s(rates, tokens, up * dims.ffn / t, dims.hidden) + gemm_time_s(
            rates, tokens, dims.hidden, dims.ffn / t
        )
    etp = shape.expert_tensor_parallel or t
    parallel = (t, shape.expert_parallel, etp)
    ex = expert_shard(tokens, dims.experts, dims.experts_per_token, dims.expert_ffn, parallel, shape.capacity_factor)
    # grouped GEMM: E/ep groups of (tokens per expert) x (f/etp) x h
    routed = gemm_time_s(rates, ex.tokens_per_expert, up * ex.ffn_shard, dims.hidden, ex.local_experts)
    routed += gemm_time_s(rates, ex.tokens_per_expert, dims.hidden, ex.ffn_shard, ex.local_experts)
    shared_ffn = dims.shared_experts * dims.expert_ffn / t
    shared = gemm_time_s(rates, tokens, up * shared_ffn, dims.hidden) + gemm_time_s(
        rates, tokens, dims.hidden, shared_ffn
    )
    router = gemm_time_s(rates, tokens, dims.experts, dims.hidden)
    return routed + shared + router


def _attention_core_s(dims: ModelDims, rates: DeviceRates, shape: ShardShape) -> tuple[float, float]:
    heads = shape.micro_batch * dims.heads / shape.tensor_parallel
    queries = shape.seq_len / shape.context_parallel
    keys = float(shape.seq_len)
    flops = 2.0 * heads * queries * keys * (dims.qk_head_dim + dims.v_head_dim)
    if shape.flash_attention:
        causal_flops = flops / 2.0
        forward = causal_flops / (rates.attention_peak_flops * FLASH_ATTENTION_PEAK_FRACTION) + KERNEL_OVERHEAD_S
        return forward, FLASH_BACKWARD_FACTOR * forward
    attention_rates = DeviceRates(rates.attention_peak_flops, rates.attention_peak_flops, rates.hbm_Bps, 2.0)
    scores = gemm_time_s(attention_rates, queries, keys, dims.qk_head_dim, heads)
    values = gemm_time_s(attention_rates, queries, dims.v_head_dim, keys, heads)
    elements = heads * queries * keys
    forward = scores + values + memory_time_s(rates, SOFTMAX_DROPOUT_BYTES[0] * elements, kernels=2.0)
    backward = 2.0 * (scores + values) + memory_time_s(rates, SOFTMAX_DROPOUT_BYTES[1] * elements, kernels=2.0)
    return forward, backward


def _elementwise_s(
    dims: ModelDims, rates: DeviceRates, shape: ShardShape, tokens: float, moe: bool
) -> tuple[float, float]:
    """(forward, backward) seconds of LayerNorms, bias-dropout-adds and the MLP activation."""
    t = shape.tensor_parallel
    replicated_tokens = tokens / t if shape.sequence_parallel else tokens
    width = (dims.experts_per_token + dims.shared_experts) * dims.expert_ffn if moe else dims.ffn
    act_bytes = SWIGLU_BYTES if dims.gated else GELU_BYTES
    times = []
    for i in (0, 1):
        per_token_hidden = 2.0 * LAYERNORM_BYTES[i] + 2.0 * BIAS_DROPOUT_ADD_BYTES[i]
        moved = replicated_tokens * per_token_hidden * dims.hidden + tokens * act_bytes[i] * width / t
        times.append(memory_time_s(rates, moved, kernels=5.0))
    return times[0], times[1]


def layer_forward_times(dims: ModelDims, rates: DeviceRates, shape: ShardShape, moe: bool) -> LayerTimes:
    """Forward seconds of one (dense or MoE) layer for one micro-batch on one GPU."""
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    linear = _attention_linear_s(dims, rates, shape, tokens) + _mlp_linear_s(dims, rates, shape, tokens, moe)
    attention_fwd, attention_bwd = _attention_core_s(dims, rates, shape)
    elementwise_fwd, elementwise_bwd = _elementwise_s(dims, rates, shape, tokens, moe)
    return LayerTimes(linear, attention_fwd, elementwise_fwd, attention_bwd, elementwise_bwd)


def logits_times_s(dims: ModelDims, rates: DeviceRates, shape: ShardShape) -> tuple[float, float]:
    """(forward, backward) seconds of the output layer and vocabulary-parallel cross entropy on one GPU."""
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    vocab_local = dims.vocab / shape.tensor_parallel
    gemm = gemm_time_s(rates, tokens, vocab_local, dims.hidden)
    forward = gemm + memory_time_s(rates, CROSS_ENTROPY_BYTES[0] * tokens * vocab_local, kernels=3.0)
    backward = 2.0 * gemm + memory_time_s(rates, CROSS_ENTROPY_BYTES[1] * tokens * vocab_local, kernels=1.0)
    return forward, backward
