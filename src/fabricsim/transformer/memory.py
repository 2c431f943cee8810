"""Memory per GPU of a training step: model states and activations (layer L4).

Model states (mixed-precision Adam, Rajbhandari et al., ZeRO, SC'20): 16-bit weights (2 B),
gradients (4 B: Megatron-LM accumulates and reduces fp32 "main" gradients; the 18 B/parameter this
gives matches the parameter + optimizer memory of Korthikanti et al. 2022, Fig. 1) and 12 B of
optimizer state (fp32 master, m, v). ZeRO stage 1 shards the optimizer state over the
data-parallel group, stage 2 also the gradients, stage 3 (FSDP) also the weights; expert
parameters are sharded over the expert-data-parallel group (dp / ep) instead.

Activations per layer and micro-batch follow Korthikanti et al. 2022 (sec. 4, eq. 1-2), written
per token so GQA, MLA, SwiGLU and MoE fall out of the same terms: for GPT this is
s·b·h·(34 + 5·a·s/h) bytes without parallelism, s·b·h·(10 + 24/t + 5·a·s/(h·t)) with tensor
parallelism t, s·b·h/t·(34 + 5·a·s/h) with sequence parallelism; selective recomputation (and
flash attention) drop the 5·a·s/h term, full recomputation keeps only the 2·s·b·h layer input.
"""

from __future__ import annotations

from typing import NamedTuple

from fabricsim.specs import Recompute
from fabricsim.transformer.compute import ShardShape
from fabricsim.transformer.constants import ADAM_STATE_BYTES_PER_PARAM
from fabricsim.transformer.flops import ModelDims

WEIGHT_BYTES = 2.0  # 16-bit model weights (FP8 recipes keep 16-bit weights and cast per GEMM)


def gradient_bytes_per_param(dtype: str) -> float:
    """Bytes per gradient for every training dtype: fp32 main gradients (Megatron-LM), also reduced in fp32."""
    del dtype  # the same for bf16, fp16 and fp8 recipes
    return 4.0


class StateBytes(NamedTuple):
    """Model-state bytes on one GPU (a named tuple: built once per layout on the planner's hot path)."""

    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def state_bytes(dense_params: float, expert_params: float, shards: tuple[int, int, int], dtype: str) -> StateBytes:
    """Bytes of weights, gradients and Adam state for the parameters one GPU holds.

    ``dense_params``/``expert_params``: parameters on this GPU before ZeRO sharding;
    ``shards`` = (zero stage, data-parallel size, expert-data-parallel size). ZeRO stage 1 shards
    the optimizer state, 2 also the gradients, 3 also the weights (Rajbhandari et al., SC'20).
    The one implementation of the rule: the analytic engine's memory calls it per layout.
    """
    zero, dp, edp = shards
    sharded = dense_params / dp + expert_params / edp
    whole = dense_params + expert_params
    return StateBytes(
        WEIGHT_BYTES * (sharded if zero >= 3 else whole),
        gradient_bytes_per_param(dtype) * (sharded if zero >= 2 else whole),
        ADAM_STATE_BYTES_PER_PARAM * (sharded if zero >= 1 else whole),
    )


def _attention_bytes_per_token(dims: ModelDims) -> float:
    """Sharded attention activations per token (Q, K, V and the projection input), 16-bit."""
    q = dims.heads * dims.qk_head_dim
    k = dims.kv_heads * dims.qk_head_dim
    v = dims.kv_heads * dims.v_head_dim
    if dims.mla:
        k = dims.heads * dims.qk_head_dim  # MLA up-projects K and V per head before attention
        v = dims.heads * dims.v_head_dim
    return 2.0 * (q + k + v + dims.heads * dims.v_head_dim)


def _mlp_bytes_per_token(dims: ModelDims, moe: bool) -> float:
    """Sharded MLP activations per token: GeLU in/out (2 x 2f) or SwiGLU gate, up, product (3 x 2f)."""
    per_width = 6.0 if dims.gated else 4.0
    if not moe:
        return per_width * dims.ffn
    routed_width = (dims.experts_per_token + dims.shared_experts) * dims.expert_ffn
    return per_width * routed_width + 2.0 * dims.hidden * dims.experts_per_token + 4.0 * dims.experts


def layer_activation_bytes(dims: ModelDims, shape: ShardShape, recompute: Recompute, moe: bool) -> float:
    """Activation bytes one layer keeps for one micro-batch on one GPU (Korthikanti et al. 2022)."""
    t = shape.tensor_parallel
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    replicated_share = 1.0 / t if shape.sequence_parallel else 1.0
    if recompute is Recompute.FULL:
        return 2.0 * dims.hidden * tokens * replicated_share
    # LayerNorm inputs (4h), QKV and MLP inputs (4h), two 1-byte dropout masks (2h): 10h
    replicated = 10.0 * dims.hidden * tokens * replicated_share
    sharded = (_attention_bytes_per_token(dims) + _mlp_bytes_per_token(dims, moe)) * tokens / t
    if shape.flash_attention:
        core = 4.0 * dims.heads * tokens / t  # fp32 log-sum-exp per head and query
    elif recompute is Recompute.SELECTIVE:
        core = 0.0
    else:  # softmax output (2 B), dropout mask (1 B) and dropout output (2 B) per score
        core = 5.0 * dims.heads * tokens * shape.seq_len / t
    return replicated + sharded + core


def logits_activation_bytes(dims: ModelDims, shape: ShardShape) -> float:
    """Output-layer activations of one micro-batch (16-bit logits + fp32 softmax), last stage."""
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    return 6.0 * tokens * dims.vocab / shape.tensor_parallel + 2.0 * dims.hidden * tokens
