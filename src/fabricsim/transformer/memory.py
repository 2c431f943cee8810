"""Memory per GPU of a training step: model states and activations (layer L4).

Model states (mixed-precision Adam, Rajbhandari et al., ZeRO, SC'20): 16-bit weights (2 B),
gradients (4 B where Megatron-LM accumulates and reduces fp32 "main" gradients, its default for
bf16 parameters; the 18 B/parameter this gives matches the parameter + optimizer memory of
Korthikanti et al. 2022, Fig. 1; 2 B for 16-bit gradients) and 12 B of optimizer state (fp32
master, m, v), plus the optimizer's fp32 copy of 16-bit gradients (4 B: 20 B/parameter in all,
Megatron-LM docs/user-guide/features/dist_optimizer.md). ZeRO stage 1 shards the optimizer state over the
data-parallel group with context parallelism (dp x cp, Megatron-Core's ``dp_cp`` group: context-
parallel ranks hold the same weights), stage 2 also the gradients, stage 3 (FSDP) also the weights;
expert parameters are sharded over the expert-data-parallel group (tp·cp·dp / (etp·ep)) instead.

Activations per layer and micro-batch follow Korthikanti et al. 2022 (sec. 4, eq. 1-2), written
per token so GQA, MLA, SwiGLU and MoE fall out of the same terms: for GPT this is
s·b·h·(34 + 5·a·s/h) bytes without parallelism, s·b·h·(10 + 24/t + 5·a·s/(h·t)) with tensor
parallelism t, s·b·h/t·(34 + 5·a·s/h) with sequence parallelism; selective recomputation (and
flash attention) drop the 5·a·s/h term, full recomputation keeps only the 2·s·b·h layer input.

MoE layers (Megatron-Core's alltoall dispatcher with memory-efficient permutation, >= 0.13): per
(token, expert) pair a GPU keeps the dispatched token (2h, the FC1 input; all-gathered over the
expert-TP group) and the expert's FFN activations on its shard (gate, up, product for SwiGLU), for
the pairs :func:`fabricsim.transformer.moe.expert_shard` gives it; shared experts are split like
the dense MLP. The router keeps fp32 probabilities (4·E bytes per token).

Fine-grained recomputation (``Recompute.FINE_GRAINED``, Megatron-Core ``--recompute-modules
layernorm mla_up_proj moe_act``; the same choices as DeepSeek-V3's "recomputation of RMSNorm and
MLA up-projection", arXiv 2412.19437 sec. 3.2.3) discards and recomputes: the two norm outputs (the
QKV and MLP inputs, 4h of the 10h), MLA's up-projected Q, K and V (only the latents
q_lora + kv_lora + rope, twice -- before and after their norm -- stay), and the expert activation's
output (the FC2 input). Checked against the public accounting of Megatron-Core's MoE report
(arXiv 2603.07685, Table 3: DeepSeek-V3 in BF16 needs 131 GB of activations per GPU without these;
the LayerNorm, MLA up-projection and SwiGLU recomputations save 8.2, 30.4 and 3.8 GB): the norm
outputs are 4h = 28.7 KB per token here, matching 8.2 GB over that layout's ~75 in-flight layer
micro-batches of 4,096 tokens (26.7 KB), and the up-projected Q/K/V ~127 KB per token against
30.4 GB (~99 KB; their MLA rope and TP details differ).
"""

from __future__ import annotations

from typing import NamedTuple

from fabricsim.specs import Recompute, recompute_modules
from fabricsim.transformer.compute import ShardShape
from fabricsim.transformer.constants import ADAM_STATE_BYTES_PER_PARAM, MAIN_GRAD_BYTES
from fabricsim.transformer.flops import ModelDims
from fabricsim.transformer.moe import expert_shard

WEIGHT_BYTES = 2.0  # 16-bit model weights (FP8 recipes keep 16-bit weights and cast per GEMM)


FP32_GRADIENT_BYTES = 4.0


def optimizer_state_bytes(gradient_bytes: float) -> float:
    """Optimizer bytes per parameter it updates: Adam's 12, and the fp32 main-gradient copy of
    16-bit gradients (``MAIN_GRAD_BYTES``)."""
    return ADAM_STATE_BYTES_PER_PARAM + (MAIN_GRAD_BYTES if gradient_bytes < FP32_GRADIENT_BYTES else 0.0)


class StateBytes(NamedTuple):
    """Model-state bytes on one GPU (a named tuple: built once per layout on the planner's hot path)."""

    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def state_bytes(
    dense_params: float, expert_params: float, shards: tuple[int, int, int], gradient_bytes: float
) -> StateBytes:
    """Bytes of weights, gradients and Adam state for the parameters one GPU holds.

    ``dense_params``/``expert_params``: parameters on this GPU before ZeRO sharding;
    ``shards`` = (zero stage, ranks sharing the dense parameters: data x context parallel,
    expert-data-parallel size); ``gradient_bytes``: 4
    (fp32) or 2 (16-bit gradients, whose fp32 copy joins the optimizer state). ZeRO stage 1 shards
    the optimizer state, 2 also the gradients, 3 also the weights (Rajbhandari et al., SC'20).
    The one implementation of the rule: the analytic engine's memory calls it per layout.
    """
    zero, dp, edp = shards
    sharded = dense_params / dp + expert_params / edp
    whole = dense_params + expert_params
    return StateBytes(
        WEIGHT_BYTES * (sharded if zero >= 3 else whole),
        gradient_bytes * (sharded if zero >= 2 else whole),
        optimizer_state_bytes(gradient_bytes) * (sharded if zero >= 1 else whole),
    )


def linear_input_bytes(dtype: str) -> float:
    """Bytes per element of a saved GEMM input: an FP8 recipe's linear layers keep the FP8 copy of
    their input they cast for the forward GEMM (Transformer Engine saves the quantised input for the
    weight-gradient GEMM; DeepSeek-V3, arXiv 2412.19437 sec. 3.3.2, caches these activations in FP8),
    16-bit otherwise. Attention's Q, K, V and the norms stay 16-bit."""
    return 1.0 if dtype in ("fp8", "fp4") else 2.0  # fp4: counted as FP8 (no claim of 4-bit caching)


def _attention_bytes_per_token(dims: ModelDims, modules: frozenset[str], lb: float) -> float:
    """Tensor-parallel-sharded attention activations per token: 16-bit Q, K, V (MLA: up-projected per
    head) and the output projection's input (``lb`` bytes); recomputing ``mla_up_proj`` rebuilds
    MLA's Q, K, V from the latents (counted by :func:`layer_activation_bytes`)."""
    projection_input = lb * dims.heads * dims.v_head_dim
    if dims.mla and "mla_up_proj" in modules:
        return projection_input
    q = dims.heads * dims.qk_head_dim
    k = dims.kv_heads * dims.qk_head_dim
    v = dims.kv_heads * dims.v_head_dim
    if dims.mla:
        k = dims.heads * dims.qk_head_dim  # MLA up-projects K and V per head before attention
        v = dims.heads * dims.v_head_dim
    return 2.0 * (q + k + v) + projection_input


def _ffn_bytes_per_width(dims: ModelDims, lb: float, drop_act_output: bool) -> float:
    """Bytes per FFN channel: the 16-bit activation input (SwiGLU: gate and up, 2 x 2; GeLU: 2) and its
    output, the FC2 input (``lb``), which fine-grained recomputation (moe_act) rebuilds."""
    act_input = 4.0 if dims.gated else 2.0
    return act_input + (0.0 if drop_act_output else lb)


def _mlp_bytes_per_token(
    dims: ModelDims, moe: bool, lb: float, modules: frozenset[str] = frozenset(), frozen: bool = False
) -> float:
    """Tensor-parallel-sharded MLP activations per token (dense MLP, or an MoE layer's shared experts
    and the router's fp32 probabilities; routed experts: :func:`_routed_bytes`). With 16-bit inputs
    this is 6f (SwiGLU) or 4f (GeLU), as Korthikanti et al.; a recomputed ``mlp`` (dense) or
    ``shared_experts`` (MoE) keeps only its input, counted with the norms. ``frozen`` (LoRA, the MLP
    frozen and unadapted): FC2's input is kept for no weight gradient, so only the activation's input stays."""
    if not moe:
        return 0.0 if "mlp" in modules else _ffn_bytes_per_width(dims, lb, frozen) * dims.ffn
    shared = 0.0 if "shared_experts" in modules else _ffn_bytes_per_width(dims, lb, False)
    return shared * dims.shared_experts * dims.expert_ffn + 4.0 * dims.experts


def _routed_bytes(dims: ModelDims, shape: ShardShape, modules: frozenset[str], tokens: float, lb: float) -> float:
    """Routed-expert activations on one GPU: per (token, expert) pair the dispatched token (the FC1
    input, ``lb`` x h) and the FFN activations of its shard (the activation's output dropped when
    ``moe_act`` is recomputed)."""
    t = shape.tensor_parallel
    parallel = (t, shape.expert_parallel, shape.expert_tensor_parallel or t)
    ex = expert_shard(tokens, dims.experts, dims.experts_per_token, dims.expert_ffn, parallel, shape.capacity_factor)
    per_width = _ffn_bytes_per_width(dims, lb, "moe_act" in modules)
    return ex.pairs * (lb * dims.hidden + per_width * ex.ffn_shard)


def layer_activation_bytes(
    dims: ModelDims,
    shape: ShardShape,
    recompute: Recompute,
    moe: bool,
    dtype: str = "bf16",
    modules: frozenset[str] | None = None,
) -> float:
    """Activation bytes one layer keeps for one micro-batch on one GPU (module docstring); ``dtype``
    the training dtype (FP8 recipes keep FP8 GEMM inputs, :func:`linear_input_bytes`); ``modules``
    the selective recomputation's modules (:func:`fabricsim.specs.recompute_modules`)."""
    t = shape.tensor_parallel
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    replicated_share = 1.0 / t if shape.sequence_parallel else 1.0
    if recompute is Recompute.FULL:
        return 2.0 * dims.hidden * tokens * replicated_share
    lb = linear_input_bytes(dtype)
    mods = recompute_modules(recompute, modules)
    # LayerNorm inputs (4h), QKV and MLP inputs (2 x 2h as GEMM inputs; an MoE layer's MLP input also
    # feeds the 16-bit router), two 1-byte dropout masks (2h): 10h in 16-bit. Recomputing the
    # ``layernorm`` module rebuilds the norm outputs (the QKV and MLP inputs). With frozen weights (LoRA on
    # attention) a dense MLP's input is kept for no weight gradient; the QKV input feeds the adapters' A.
    frozen = shape.frozen_weights
    norm_outputs = 0.0 if "layernorm" in mods else lb + (2.0 if moe else 0.0 if frozen else lb)
    replicated = (6.0 + norm_outputs) * dims.hidden * tokens * replicated_share
    if dims.mla:  # latents before (16-bit) and after (up-projection input) their norms; not TP-split
        replicated += (2.0 + lb) * dims.mla_latent_width * tokens
    sharded = _attention_bytes_per_token(dims, mods, lb) + _mlp_bytes_per_token(dims, moe, lb, mods, frozen)
    sharded *= tokens / t
    if moe:
        sharded += _routed_bytes(dims, shape, mods, tokens, lb)
    if shape.flash_attention:
        core = 4.0 * dims.heads * tokens / t  # fp32 log-sum-exp per head and query
    elif "core_attn" in mods:
        core = 0.0
    else:  # softmax output (2 B), dropout mask (1 B) and dropout output (2 B) per score
        core = 5.0 * dims.heads * tokens * shape.seq_len / t
    return replicated + sharded + core


def logits_activation_bytes(dims: ModelDims, shape: ShardShape) -> float:
    """Output-layer activations of one micro-batch (16-bit logits + fp32 softmax), last stage."""
    tokens = shape.micro_batch * shape.seq_len / shape.context_parallel
    return 6.0 * tokens * dims.vocab / shape.tensor_parallel + 2.0 * dims.hidden * tokens
