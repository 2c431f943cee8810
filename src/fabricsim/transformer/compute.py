"""Compute-time model of one transformer layer on one GPU, from kernel-level rates (layer L4).

Each GEMM takes the time of :mod:`fabricsim.transformer.kernels` (tile/wave quantisation over the
device's SMs, per-tile overhead, the device's achievable fraction *for the GEMM format*, a memory
roofline for skinny shapes and a fixed per-kernel time). Element-wise kernels (LayerNorm,
bias-dropout-add, GeLU/SwiGLU, softmax, the MoE token permutation, cross entropy in the
framework's implementation: unfused, fused native or Transformer Engine's) are bandwidth bound:
bytes moved / the device's achieved HBM bandwidth. Attention is either *flash* (one fused kernel;
no s x s matrix in HBM; causal blocks skipped; efficiency by sequence length, head dim and
causality from the device's FlashAttention-2/3 or Blackwell kernel benchmark, forward and backward
separately) or *unfused* (two batched GEMMs and a fused scale-mask-softmax + dropout over the s x s
score matrix in HBM, as Megatron-LM ran in 2021-22).

FP8/FP4 recipes (what real recipes pay, Transformer Engine): the linear-layer GEMMs run in the
recipe's format (per-tensor FP8, block-scaled FP8, MXFP8, NVFP4); every GEMM input is quantised in
forward and every output gradient in backward (``kernels.QUANTIZE_BYTES`` per element through HBM);
attention, norms, activations, the output layer and the router stay 16-bit. Backward: every GEMM
becomes two (data and weight gradient) -> 2x, or one with the weights frozen (LoRA fine-tuning,
``ShardShape.frozen_weights``: the data gradient only; the rank-r adapters' GEMMs are not counted,
under 0.1% of a Llama 2 70B layer's FLOPs at r = 16); flash attention's backward runs 5 matmuls for the
forward's 2 -> 2.5x (Dao 2023, sec. 3.1.2); element-wise kernels are charged the bytes their
gradient kernels move (listed below), about 1.2-1.5x the forward's.

Constants: :mod:`fabricsim.transformer.constants` and :mod:`fabricsim.transformer.kernels`.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.specs import DeviceSpec
from fabricsim.transformer.constants import KERNEL_OVERHEAD_S
from fabricsim.transformer.flops import ModelDims
from fabricsim.transformer.kernels import (
    AttentionRates,
    GemmRates,
    attention_rates,
    gemm_format,
    gemm_rates,
    hbm_achieved_Bps,
    quantize_bytes_per_element,
)
from fabricsim.transformer.moe import expert_shard

ACTIVATION_BYTES = 2.0  # 16-bit activations (bf16/fp16), also under FP8 recipes
# Bytes per element moved by the element-wise kernels of one layer: (forward, backward).
LAYERNORM_BYTES = (4.0, 6.0)  # fwd read x, write y; bwd read x and dy, write dx (x2 per layer)
BIAS_DROPOUT_ADD_BYTES = (7.0, 5.0)  # fwd read input and residual, write output and 1-byte mask; bwd dy, mask -> dx
GELU_BYTES = (4.0, 6.0)  # fwd read + write the 4h intermediate; bwd read x and dy, write dx
SWIGLU_BYTES = (6.0, 10.0)  # fwd read gate and up, write product; bwd read gate, up, dy, write two grads
SOFTMAX_DROPOUT_BYTES = (9.0, 11.0)  # scale-mask-softmax + dropout: fwd r/w + mask; bwd dropout (5) + softmax (6)
ROPE_BYTES = (4.0, 4.0)  # fwd read + write each rotated q/k element (16-bit); bwd the same on the gradients
# Vocabulary-parallel cross entropy over the 16-bit logits: (forward, backward) bytes per logit and
# kernels, by implementation (Megatron-Core ``--cross-entropy-loss-fusion`` and
# ``--cross-entropy-fusion-impl``; kernel-efficiency.md S15):
# * unfused (Megatron-Core's default, and Megatron-LM 2021-22): cast to fp32 (2 + 4), max (4),
#   subtract (4 + 4), exp (4 + 4), sum (4), divide (4 + 4) = 38 in 6 kernels; backward multiply by
#   the loss gradient (4 + 4) and cast back (4 + 2) = 14 in 2.
# * native (fused, TorchScript): cast + max (2 + 4), subtract + exp (4 + 4), sum (4), divide (4 + 4)
#   = 26 in 4; backward as unfused.
# * te (Transformer Engine's Triton kernels): one online-softmax read (2); backward reads the logits
#   again and writes the gradient in place (2 + 2).
CROSS_ENTROPY_IMPLS = ("unfused", "native", "te")
CROSS_ENTROPY_BYTES = {"unfused": (38.0, 14.0), "native": (26.0, 14.0), "te": (2.0, 4.0)}
CROSS_ENTROPY_KERNELS = {"unfused": (6.0, 2.0), "native": (4.0, 2.0), "te": (2.0, 1.0)}
# MoE token permutation (Megatron-Core's fused permute/unpermute, ``--moe-permute-fusion``): per pass
# the permute reads each local token and writes one copy per routed expert, the unpermute reads the
# expert outputs and writes the weighted sums back (16-bit); the alltoall dispatcher also sorts the
# received chunks by local expert after the exchange and back before it (``sort_chunks_by_idxs``,
# when a GPU holds more than one expert). Megatron-Core token_dispatcher.py; kernel-efficiency.md S16.
PERMUTE_KERNELS = 2.0
SORT_CHUNKS_KERNELS = 2.0
FLASH_BACKWARD_FACTOR = 2.5  # backward matmuls over forward matmuls of fused attention


@dataclass(frozen=True, slots=True)
class DeviceRates:
    """Kernel rates of one GPU for a training dtype and recipe: the linear layers' GEMMs
    (``gemm``), 16-bit GEMMs (``gemm16``: output layer, router, unfused attention), fused
    attention, achieved HBM B/s, and the quantisation bytes per GEMM-input element."""

    gemm: GemmRates
    gemm16: GemmRates
    attention: AttentionRates
    hbm_Bps: float
    quantize_bytes: float = 0.0

    @property
    def gemm_peak_flops(self) -> float:
        return self.gemm.peak

    @property
    def attention_peak_flops(self) -> float:
        return self.attention.peak

    @property
    def gemm_operand_bytes(self) -> float:
        return self.gemm.operand_bytes


def device_rates(device: DeviceSpec, dtype: str, recipe: str | None = None) -> DeviceRates:
    """Sustained rates of ``device`` for training in ``dtype`` (FP8/FP4 under ``recipe``: delayed,
    current, block, mxfp8; None = per-tensor delayed scaling, Megatron-Core's default): a step keeps
    the GPU at its power limit, so compute runs at the sustained clock (:mod:`.kernels`)."""
    sixteen = "fp16" if dtype == "fp16" else "bf16"
    return DeviceRates(
        gemm=gemm_rates(device, gemm_format(dtype, recipe), sustained=True),
        gemm16=gemm_rates(device, sixteen, sustained=True),
        attention=attention_rates(device, sustained=True),
        hbm_Bps=hbm_achieved_Bps(device),
        quantize_bytes=quantize_bytes_per_element(dtype, recipe, device.generation),
    )


def gemm_efficiency(rates: DeviceRates, m: float, n: float, k: float) -> float:
    """Fraction of the format's peak a GEMM of shape (m x k)·(k x n) sustains (compute side)."""
    return rates.gemm.efficiency(m, n, k)


def gemm_time_s(rates: DeviceRates, m: float, n: float, k: float, count: float = 1.0, *, wide: bool = False) -> float:
    """Seconds for ``count`` GEMMs of shape (m, n, k) in one launch (batched or grouped): the
    kernel's time including its fixed cost (``kernels.KERNEL_FIXED_S``); ``wide`` runs it in 16 bit
    whatever the training dtype."""
    return (rates.gemm16 if wide else rates.gemm).time_s(m, n, k, count)


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
    cross_entropy: str = "unfused"  # CROSS_ENTROPY_IMPLS
    sort_chunks: bool = True  # the alltoall dispatcher re-sorts received tokens by local expert
    frozen_weights: bool = False  # LoRA: base weights frozen, backward computes activation gradients only


@dataclass(frozen=True, slots=True)
class LayerTimes:
    """Seconds of one layer on one GPU for one micro-batch, by kind of work (forward unless named)."""

    linear_s: float
    attention_s: float
    elementwise_s: float
    attention_backward_s: float
    elementwise_backward_s: float
    mlp_linear_s: float = 0.0  # the (dense or MoE) MLP's share of linear_s
    backward_gemms: float = 2.0  # backward GEMMs per forward GEMM: data + weight gradient, 1 with frozen weights

    @property
    def total_s(self) -> float:
        """Forward seconds."""
        return self.linear_s + self.attention_s + self.elementwise_s

    @property
    def backward_s(self) -> float:
        return self.backward_gemms * self.linear_s + self.attention_backward_s + self.elementwise_backward_s


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
    router = gemm_time_s(rates, tokens, dims.experts, dims.hidden, wide=True)
    return routed + shared + router


def _attention_core_s(dims: ModelDims, rates: DeviceRates, shape: ShardShape) -> tuple[float, float]:
    heads = shape.micro_batch * dims.heads / shape.tensor_parallel
    queries = shape.seq_len / shape.context_parallel
    keys = float(shape.seq_len)
    flops = 2.0 * heads * queries * keys * (dims.qk_head_dim + dims.v_head_dim)
    if shape.flash_attention:
        # causal: half the score blocks are skipped; the kernel runs at the efficiency of its
        # per-rank sequence (context parallelism splits it into s/cp chunks)
        causal_flops = flops / 2.0
        head_dim = 0.5 * (dims.qk_head_dim + dims.v_head_dim)
        attention = rates.attention
        forward_eff = attention.efficiency(queries, head_dim, causal=True)
        backward_eff = attention.efficiency(queries, head_dim, causal=True, backward=True)
        forward = causal_flops / (attention.peak * forward_eff) + KERNEL_OVERHEAD_S
        backward = FLASH_BACKWARD_FACTOR * causal_flops / (attention.peak * backward_eff) + KERNEL_OVERHEAD_S
        return forward, backward
    scores = gemm_time_s(rates, queries, keys, dims.qk_head_dim, heads, wide=True)
    values = gemm_time_s(rates, queries, dims.v_head_dim, keys, heads, wide=True)
    elements = heads * queries * keys
    forward = scores + values + memory_time_s(rates, SOFTMAX_DROPOUT_BYTES[0] * elements, kernels=2.0)
    backward = 2.0 * (scores + values) + memory_time_s(rates, SOFTMAX_DROPOUT_BYTES[1] * elements, kernels=2.0)
    return forward, backward


def _quantised_elements(dims: ModelDims, shape: ShardShape, tokens: float, moe: bool) -> tuple[float, float]:
    """Elements an FP8/FP4 recipe quantises per layer on one GPU: (GEMM inputs in forward, output
    gradients in backward) of the attention projections and the (dense or routed + shared) MLP."""
    t = shape.tensor_parallel
    up = 2 if dims.gated else 1
    qkv_out = (dims.attention_params - dims.heads * dims.v_head_dim * dims.hidden) / dims.hidden / t
    out_in = dims.heads * dims.v_head_dim / t
    if moe:
        width = (dims.experts_per_token + dims.shared_experts) * dims.expert_ffn / t
        mlp_in_tokens = tokens * (dims.experts_per_token + dims.shared_experts)
    else:
        width, mlp_in_tokens = dims.ffn / t, tokens
    forward = tokens * (dims.hidden + out_in + width) + mlp_in_tokens * dims.hidden
    backward = tokens * (qkv_out + dims.hidden + up * width) + mlp_in_tokens * dims.hidden
    return forward, backward


def permutation_bytes(dims: ModelDims, shape: ShardShape, tokens: float) -> tuple[float, float]:
    """(bytes, kernels) of one pass of an MoE layer's token permutation on one GPU (the
    ``PERMUTE_KERNELS`` comment): permute + unpermute over the local tokens and their routed copies,
    and the alltoall dispatcher's chunk sorts over the received (token, expert) pairs."""
    t = shape.tensor_parallel
    local = tokens / t if shape.sequence_parallel else tokens
    parallel = (t, shape.expert_parallel, shape.expert_tensor_parallel or t)
    ex = expert_shard(tokens, dims.experts, dims.experts_per_token, dims.expert_ffn, parallel, shape.capacity_factor)
    routed = local * dims.experts_per_token * shape.capacity_factor
    moved = 2.0 * (local + routed) * dims.hidden * ACTIVATION_BYTES
    kernels = PERMUTE_KERNELS
    if shape.sort_chunks and ex.local_experts > 1:
        moved += 2.0 * 2.0 * ex.pairs * dims.hidden * ACTIVATION_BYTES
        kernels += SORT_CHUNKS_KERNELS
    return moved, kernels


def _elementwise_s(
    dims: ModelDims, rates: DeviceRates, shape: ShardShape, tokens: float, moe: bool
) -> tuple[float, float]:
    """(forward, backward) seconds of LayerNorms, bias-dropout-adds, the MLP activation, rotary
    embeddings of q and k (RoPE models), (FP8/FP4 recipes) the quantisation kernels and (MoE) the
    token permutation."""
    t = shape.tensor_parallel
    replicated_tokens = tokens / t if shape.sequence_parallel else tokens
    width = (dims.experts_per_token + dims.shared_experts) * dims.expert_ffn if moe else dims.ffn
    act_bytes = SWIGLU_BYTES if dims.gated else GELU_BYTES
    quantised = _quantised_elements(dims, shape, tokens, moe) if rates.quantize_bytes else (0.0, 0.0)
    rotated = tokens * (dims.heads + (1 if dims.mla else dims.kv_heads)) / t * dims.rope_dim
    permuted, permute_kernels = permutation_bytes(dims, shape, tokens) if moe else (0.0, 0.0)
    times = []
    for i in (0, 1):
        per_token_hidden = 2.0 * LAYERNORM_BYTES[i] + 2.0 * BIAS_DROPOUT_ADD_BYTES[i]
        moved = replicated_tokens * per_token_hidden * dims.hidden + tokens * act_bytes[i] * width / t
        moved += rates.quantize_bytes * quantised[i] + ROPE_BYTES[i] * rotated + permuted
        kernels = 5.0 + (4.0 if rates.quantize_bytes else 0.0) + (1.0 if dims.rope_dim else 0.0) + permute_kernels
        times.append(memory_time_s(rates, moved, kernels=kernels))
    return times[0], times[1]


def layer_forward_times(dims: ModelDims, rates: DeviceRates, shape: ShardShape, moe: bool) -> LayerTimes:
    """Forward seconds of one (dense or MoE) layer for one micro-batch on one GPU."""
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    mlp = _mlp_linear_s(dims, rates, shape, tokens, moe)
    linear = _attention_linear_s(dims, rates, shape, tokens) + mlp
    attention_fwd, attention_bwd = _attention_core_s(dims, rates, shape)
    elementwise_fwd, elementwise_bwd = _elementwise_s(dims, rates, shape, tokens, moe)
    gemms = 1.0 if shape.frozen_weights else 2.0
    return LayerTimes(linear, attention_fwd, elementwise_fwd, attention_bwd, elementwise_bwd, mlp, gemms)


def logits_times_s(dims: ModelDims, rates: DeviceRates, shape: ShardShape) -> tuple[float, float]:
    """(forward, backward) seconds of the output layer and vocabulary-parallel cross entropy on one GPU."""
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    vocab_local = dims.vocab / shape.tensor_parallel
    gemm = gemm_time_s(rates, tokens, vocab_local, dims.hidden, wide=True)  # the output layer stays 16-bit
    moved, kernels = CROSS_ENTROPY_BYTES[shape.cross_entropy], CROSS_ENTROPY_KERNELS[shape.cross_entropy]
    forward = gemm + memory_time_s(rates, moved[0] * tokens * vocab_local, kernels=kernels[0])
    gemms = 1.0 if shape.frozen_weights else 2.0  # a frozen output layer has no weight gradient
    backward = gemms * gemm + memory_time_s(rates, moved[1] * tokens * vocab_local, kernels=kernels[1])
    return forward, backward
