"""Parameter counts of a decoder-only transformer (layer L4).

Counts are exact matrix sizes from the model's Hugging Face config; biases are left out (they are
< 0.01% for the models we model, and neither Llama nor DeepSeek has them), RMS/LayerNorm weights
are included (2 per layer + 1 final). Attention is MHA/GQA/MQA
(q: h x heads*d, k and v: h x kv_heads*d, o: heads*d x h) or DeepSeek MLA (low-rank q and joint
kv compression, arXiv 2405.04434 sec. 2.1). MLPs are 2-matrix (GELU) or 3-matrix gated (SwiGLU).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from fabricsim.errors import FabricsimError
from fabricsim.limits import cap, cap_hint
from fabricsim.specs import ModelSpec, SystemSpec

MIN_WEIGHT_BYTES_PER_PARAMETER = 0.5
"""The narrowest weight dtype fabricsim models: FP4 (NVFP4/MXFP4), 4 bits per parameter."""


@dataclass(frozen=True, slots=True)
class ParameterCounts:
    """Parameters (elements, not bytes) by component."""

    embedding: int
    output: int
    attention_per_layer: int
    norms_per_layer: int
    dense_mlp_per_layer: int
    router_per_layer: int
    expert: int
    shared_experts_per_layer: int
    num_dense_layers: int
    num_moe_layers: int
    num_experts: int
    experts_per_token: int
    final_norm: int

    @property
    def moe_layer_total(self) -> int:
        """One MoE layer's MLP block with all its experts."""
        return self.router_per_layer + self.num_experts * self.expert + self.shared_experts_per_layer

    @property
    def moe_layer_active(self) -> int:
        """One MoE layer's MLP parameters that one token uses."""
        return self.router_per_layer + self.experts_per_token * self.expert + self.shared_experts_per_layer

    @property
    def per_layer_common(self) -> int:
        return self.attention_per_layer + self.norms_per_layer

    @property
    def transformer_total(self) -> int:
        return (
            self.num_dense_layers * (self.per_layer_common + self.dense_mlp_per_layer)
            + self.num_moe_layers * (self.per_layer_common + self.moe_layer_total)
            + self.final_norm
        )

    @property
    def total(self) -> int:
        return self.embedding + self.output + self.transformer_total

    @property
    def active(self) -> int:
        """Parameters one token touches (all of a dense model; routed top-k for MoE)."""
        return (
            self.embedding
            + self.output
            + self.final_norm
            + self.num_dense_layers * (self.per_layer_common + self.dense_mlp_per_layer)
            + self.num_moe_layers * (self.per_layer_common + self.moe_layer_active)
        )


def attention_parameters(model: ModelSpec) -> int:
    """Weights of one attention block (projections only)."""
    h = model.hidden_size
    heads = model.num_attention_heads
    if model.is_mla:
        rope = model.qk_rope_head_dim or 0
        nope = model.qk_nope_head_dim or 0
        v_dim = model.v_head_dim or model.head_size
        q_dim = heads * (nope + rope)
        q = h * model.q_lora_rank + model.q_lora_rank * q_dim if model.q_lora_rank else h * q_dim
        kv_rank = model.kv_lora_rank or 0
        kv = h * (kv_rank + rope) + kv_rank * heads * (nope + v_dim)
        return q + kv + heads * v_dim * h
    d = model.head_size
    return h * heads * d + 2 * h * model.kv_heads * d + heads * d * h


def mlp_parameters(hidden: int, intermediate: int, gated: bool) -> int:
    """One MLP: 3 matrices if gated (SwiGLU), else 2."""
    return (3 if gated else 2) * hidden * intermediate


ModelT = TypeVar("ModelT")
_PER_MODEL_KEPT = 64  # model objects whose derived figures are kept (a catalog holds one per name)


def per_model(function: Callable[[ModelSpec], ModelT]) -> Callable[[ModelSpec], ModelT]:
    """Cache ``function`` of a model by the model object's identity: a :class:`ModelSpec` is frozen
    (its figures cannot change) and the catalog returns one object per name, so repeated estimates
    derive them once (issue 27: ``api.train`` in a loop). The cache holds the model alive with its
    value (its id is not reused while kept); bounded, cleared when full."""
    kept: dict[int, tuple[ModelSpec, ModelT]] = {}

    @functools.wraps(function)
    def cached(model: ModelSpec) -> ModelT:
        hit = kept.get(id(model))
        if hit is not None and hit[0] is model:
            return hit[1]
        value = function(model)
        if len(kept) >= _PER_MODEL_KEPT:
            kept.clear()
        kept[id(model)] = (model, value)
        return value

    return cached


@per_model
def parameter_counts(model: ModelSpec) -> ParameterCounts:
    h = model.hidden_size
    gated = model.gated_mlp
    expert = mlp_parameters(h, model.expert_intermediate_size, gated) if model.is_moe else 0
    return ParameterCounts(
        embedding=model.vocab_size * h,
        output=0 if model.tie_word_embeddings else model.vocab_size * h,
        attention_per_layer=attention_parameters(model),
        norms_per_layer=2 * h,
        dense_mlp_per_layer=mlp_parameters(h, model.intermediate_size, gated),
        router_per_layer=h * model.num_local_experts if model.is_moe else 0,
        expert=expert,
        shared_experts_per_layer=model.n_shared_experts * expert,
        num_dense_layers=model.num_dense_layers,
        num_moe_layers=model.num_moe_layers,
        num_experts=model.num_local_experts,
        experts_per_token=model.num_experts_per_tok,
        final_norm=h,
    )


def check_cluster_can_hold(model: ModelSpec, system: SystemSpec) -> None:
    """Refuse a model whose weights alone, at FP4, exceed the memory (HBM and every memory tier)
    of the largest cluster fabricsim accepts: ``FABRICSIM_MAX_GPUS`` GPUs of ``system``. No layout
    can run it, and its figures would be noise (a config.json with 10^6 experts, each routed,
    reported 39,856 TiB per GPU and 0 tokens/s)."""
    per_gpu_bytes = system.device.hbm_capacity_bytes + sum(
        tier.capacity_per_gpu_bytes for tier in system.memory_tiers.values()
    )
    gpus = cap("GPUS")
    total = parameter_counts(model).total
    need_bytes = total * MIN_WEIGHT_BYTES_PER_PARAMETER
    if need_bytes > gpus * per_gpu_bytes:
        problem = (f"{model.name} has {total:.3g} parameters: even as FP4 weights ({need_bytes:.3g} B) they exceed "
                   f"the memory of {gpus} GPUs of {system.name} ({gpus * per_gpu_bytes:.3g} B)")
        raise FabricsimError("model", problem, cap_hint("GPUS"))
