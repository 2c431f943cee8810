"""Exact FLOP counts of a decoder-only transformer's training step (layer L4).

A GEMM of an (m x k) by (k x n) matrix costs 2mkn FLOPs, so every linear layer costs
2 x tokens x its parameters. Per layer and micro-batch of ``b`` sequences of ``s`` tokens:

* attention projections (QKV + output; GQA/MQA and MLA low-rank included): 2·b·s·P_attn
* attention core (scores QKᵀ and weighted values AV): 2·b·s²·heads·(d_qk + d_v), counted for the
  full s x s matrix as Megatron does (Narayanan et al. SC'21 eq. 3), not halved for causality
* MLP: 2·b·s·P_mlp (2 matrices, or 3 for SwiGLU); an MoE layer counts the router, the top-k routed
  experts and the shared experts each token uses
* logits (output layer): 2·b·s·h·V, once per model

The backward pass costs twice the forward. *Model* FLOPs are forward + backward (3x forward),
*hardware* FLOPs add the recomputed forward: the whole layer stack under full recomputation, the
attention core under selective recomputation (Korthikanti et al. 2022, sec. 4.2), MLA's
up-projections under fine-grained recomputation; the output
layer is never recomputed. With h the hidden size, l layers and V the vocabulary these reduce to
96·B·s·l·h²·(1 + s/6h + V/16lh) (full recompute, Narayanan et al. SC'21 sec. 5.1) and
72·B·s·l·h²·(1 + s/6h + V/12lh) (model FLOPs, Korthikanti et al. 2022 sec. 6) for GPT models.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.specs import ModelSpec, Recompute, recompute_modules
from fabricsim.transformer.parameters import mlp_parameters, parameter_counts, per_model


@dataclass(frozen=True, slots=True)
class ModelDims:
    """Layout-independent dimensions of a model, computed once per model (elements, not bytes)."""

    hidden: int
    layers: int
    dense_layers: int
    moe_layers: int
    heads: int
    kv_heads: int
    qk_head_dim: int
    v_head_dim: int
    vocab: int
    ffn: int
    expert_ffn: int
    gated: bool
    experts: int
    experts_per_token: int
    shared_experts: int
    attention_params: int
    dense_mlp_params: int
    expert_params: int
    router_params: int
    embedding_params: int
    output_params: int
    tied_embeddings: bool
    mla: bool
    rope_dim: int = 0
    """Head dimension rotated by RoPE (0: learned absolute positions, GPT-2/3 style)."""
    q_lora_rank: int = 0  # MLA only: query latent width
    kv_lora_rank: int = 0  # MLA only: key/value latent width
    qk_rope_dim: int = 0  # MLA only: the rotary part of qk_head_dim

    @property
    def mla_latent_width(self) -> float:
        """Per-token latent width MLA stores before its up-projections (q and kv latents, rope key)."""
        return self.q_lora_rank + self.kv_lora_rank + self.qk_rope_dim

    @property
    def moe_active_mlp_params(self) -> int:
        """MLP parameters one token uses in an MoE layer (router + top-k + shared experts)."""
        return self.router_params + (self.experts_per_token + self.shared_experts) * self.expert_params


@per_model
def model_dims(model: ModelSpec) -> ModelDims:
    """Collect the dimensions the step model needs from a Hugging Face style spec."""
    counts = parameter_counts(model)
    if model.is_mla:
        qk_dim = (model.qk_nope_head_dim or 0) + (model.qk_rope_head_dim or 0)
        v_dim = model.v_head_dim or model.head_size
    else:
        qk_dim = v_dim = model.head_size
    expert_ffn = model.expert_intermediate_size if model.is_moe else 0
    return ModelDims(
        hidden=model.hidden_size,
        layers=model.num_hidden_layers,
        dense_layers=model.num_dense_layers,
        moe_layers=model.num_moe_layers,
        heads=model.num_attention_heads,
        kv_heads=model.kv_heads,
        qk_head_dim=qk_dim,
        v_head_dim=v_dim,
        vocab=model.vocab_size,
        ffn=model.intermediate_size,
        expert_ffn=expert_ffn,
        gated=model.gated_mlp,
        experts=model.num_local_experts,
        experts_per_token=model.num_experts_per_tok,
        shared_experts=model.n_shared_experts,
        attention_params=counts.attention_per_layer,
        dense_mlp_params=mlp_parameters(model.hidden_size, model.intermediate_size, model.gated_mlp),
        expert_params=counts.expert,
        router_params=counts.router_per_layer,
        embedding_params=counts.embedding,
        output_params=counts.output if counts.output else counts.embedding,
        tied_embeddings=not counts.output,
        mla=model.is_mla,
        rope_dim=_rope_dim(model, qk_dim),
        q_lora_rank=(model.q_lora_rank or 0) if model.is_mla else 0,
        kv_lora_rank=(model.kv_lora_rank or 0) if model.is_mla else 0,
        qk_rope_dim=(model.qk_rope_head_dim or 0) if model.is_mla else 0,
    )


def _rope_dim(model: ModelSpec, qk_dim: int) -> int:
    """RoPE'd part of a query/key head: MLA rotates ``qk_rope_head_dim``; the gated-MLP families
    (Llama, Mistral, Qwen, DeepSeek, Kimi) rotate the whole head; the GeLU GPT models use learned
    absolute positions (Megatron GPT, GPT-3), no RoPE. The config has no position-type field, so the
    MLP type stands in for it."""
    if model.is_mla:
        return model.qk_rope_head_dim or 0
    return qk_dim if model.gated_mlp else 0


def attention_core_flops(dims: ModelDims, batch: int, seq_len: int) -> float:
    """Forward FLOPs of QKᵀ and AV for ``batch`` sequences of ``seq_len`` (full s x s matrix)."""
    return 2.0 * batch * seq_len * seq_len * dims.heads * (dims.qk_head_dim + dims.v_head_dim)


def layer_forward_flops(dims: ModelDims, batch: int, seq_len: int, moe: bool) -> float:
    """Forward FLOPs of one transformer layer (dense or MoE) for ``batch`` x ``seq_len`` tokens."""
    tokens = batch * seq_len
    mlp = dims.moe_active_mlp_params if moe else dims.dense_mlp_params
    return 2.0 * tokens * (dims.attention_params + mlp) + attention_core_flops(dims, batch, seq_len)


def logits_forward_flops(dims: ModelDims, batch: int, seq_len: int) -> float:
    """Forward FLOPs of the output (vocabulary) projection."""
    return 2.0 * batch * seq_len * dims.hidden * dims.vocab


def model_forward_flops(dims: ModelDims, batch: int, seq_len: int) -> float:
    """Forward FLOPs of the whole model (all layers + logits) for ``batch`` sequences."""
    return (
        dims.dense_layers * layer_forward_flops(dims, batch, seq_len, moe=False)
        + dims.moe_layers * layer_forward_flops(dims, batch, seq_len, moe=True)
        + logits_forward_flops(dims, batch, seq_len)
    )


def recompute_flops(
    dims: ModelDims, batch: int, seq_len: int, recompute: Recompute, modules: frozenset[str] | None = None
) -> float:
    """Extra forward FLOPs that activation recomputation adds (Korthikanti et al. 2022): the whole
    layers, or the selective modules' (:func:`fabricsim.specs.recompute_modules`; norms and
    activations are element-wise: no GEMM FLOPs)."""
    if recompute is Recompute.FULL:
        return model_forward_flops(dims, batch, seq_len) - logits_forward_flops(dims, batch, seq_len)
    mods = recompute_modules(recompute, modules)
    tokens = batch * seq_len
    flops = dims.layers * attention_core_flops(dims, batch, seq_len) if "core_attn" in mods else 0.0
    if "mla_up_proj" in mods and dims.mla:  # MLA's Q and KV up-projections (GEMMs)
        nope = dims.qk_head_dim - dims.qk_rope_dim
        per_token = dims.q_lora_rank * dims.heads * dims.qk_head_dim
        per_token += dims.kv_lora_rank * dims.heads * (nope + dims.v_head_dim)
        flops += dims.layers * 2.0 * tokens * per_token
    if "mlp" in mods:  # the dense layers' MLP
        flops += dims.dense_layers * 2.0 * tokens * dims.dense_mlp_params
    if "shared_experts" in mods:
        flops += dims.moe_layers * 2.0 * tokens * dims.shared_experts * dims.expert_params
    return flops


def mtp_forward_flops(dims: ModelDims, batch: int, seq_len: int) -> float:
    """Forward FLOPs of one multi-token-prediction depth (DeepSeek-V3, arXiv 2412.19437 sec. 2.2;
    Megatron-Core ``MultiTokenPredictionLayer``): the projection of the concatenated normalised
    hidden state and next-token embedding (2h -> h), one transformer layer of the model's kind
    (MoE when the model has MoE layers) and the shared output layer again."""
    tokens = batch * seq_len
    projection = 2.0 * tokens * 2 * dims.hidden * dims.hidden
    layer = layer_forward_flops(dims, batch, seq_len, moe=dims.moe_layers > 0)
    return projection + layer + logits_forward_flops(dims, batch, seq_len)


def model_flops_per_step(dims: ModelDims, global_batch: int, seq_len: int, mtp_layers: int = 0) -> float:
    """Model FLOPs of one training step: forward + backward = 3 x forward (no recomputation),
    multi-token prediction included (as Megatron-LM's ``num_floating_point_operations`` counts it)."""
    forward = model_forward_flops(dims, global_batch, seq_len)
    return 3.0 * (forward + mtp_layers * mtp_forward_flops(dims, global_batch, seq_len))


def weight_gradient_flops(dims: ModelDims, global_batch: int, seq_len: int) -> float:
    """FLOPs of one step's weight-gradient GEMMs (one per forward GEMM, the output layer's included):
    what a step with frozen base weights (LoRA fine-tuning) does not compute. Attention's score and
    value matmuls have no weights; the LoRA adapters' own GEMMs are not counted (rank r over hidden h:
    under 0.1% of a layer at r = 16, h = 8192)."""
    return model_forward_flops(dims, global_batch, seq_len) - dims.layers * attention_core_flops(
        dims, global_batch, seq_len
    )


def hardware_flops_per_step(
    dims: ModelDims,
    global_batch: int,
    seq_len: int,
    recompute: Recompute,
    mtp_layers: int = 0,
    modules: frozenset[str] | None = None,
) -> float:
    """Hardware FLOPs of one training step: model FLOPs plus the recomputed forward."""
    model = model_flops_per_step(dims, global_batch, seq_len, mtp_layers)
    return model + recompute_flops(dims, global_batch, seq_len, recompute, modules)


def narayanan_full_recompute_flops(global_batch: int, seq_len: int, layers: int, hidden: int, vocab: int) -> float:
    """Closed form of Narayanan et al. (SC'21, sec. 5.1): 96·B·s·l·h²·(1 + s/6h + V/16lh)."""
    return (
        96.0
        * global_batch
        * seq_len
        * layers
        * hidden**2
        * (1.0 + seq_len / (6.0 * hidden) + vocab / (16.0 * layers * hidden))
    )


def korthikanti_model_flops(global_batch: int, seq_len: int, layers: int, hidden: int, vocab: int) -> float:
    """Closed form of Korthikanti et al. (2022, sec. 6): 72·B·s·l·h²·(1 + s/6h + V/12lh)."""
    return (
        72.0
        * global_batch
        * seq_len
        * layers
        * hidden**2
        * (1.0 + seq_len / (6.0 * hidden) + vocab / (12.0 * layers * hidden))
    )
