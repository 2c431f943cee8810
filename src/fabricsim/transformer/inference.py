"""FLOPs and bytes of one inference step, prefill and decode, for the whole model (layer L4).

A step processes ``tokens`` new tokens (decode tokens, one per running sequence, plus prompt chunks of
sequences in prefill). Per step, summed over all GPUs:

* linear FLOPs = 2 x active matmul parameters x tokens (Kaplan et al. 2020, C_forward = 2N), split
  into the non-expert part (attention projections, dense MLPs, shared experts, router) and the
  routed-expert part (top-k experts per token), plus the LM head 2 x vocab x hidden for every token
  whose logits are needed (every decode token, the last token of a finished prompt);
* attention FLOPs = per (query, key) pair and layer, ``2 x heads x (qk_dim + v_dim)`` (QK^T and
  the weighted sum of V, 2 FLOP per multiply-add). A prompt chunk of ``c`` tokens after ``p`` cached
  tokens has ``c x p + c (c + 1) / 2`` causal pairs -- the prompt's quadratic term; a decode token
  at context ``n`` has ``n`` pairs. MLA decode runs in the absorbed form over the latent
  (qk dim ``kv_lora_rank + qk_rope_head_dim``, v dim ``kv_lora_rank``; DeepSeek-V2 sec. 2.1.2);
* bytes read = weights once per step (for MoE, the non-expert weights plus the *expected number of
  distinct experts* the step's tokens touch, ``E (1 - (1 - k/E)^T)`` for T tokens routed uniformly
  to k of E experts) + the KV cache of every context token attended + the KV written for new tokens.

Embedding lookups read only the rows of the step's tokens and are left out (< 0.1% of the bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.specs import ModelSpec
from fabricsim.transformer.kv_cache import kv_elements_per_token_per_layer
from fabricsim.transformer.parameters import parameter_counts


@dataclass(frozen=True, slots=True)
class TokenCosts:
    """Whole-model costs per token, per attention pair and per step (elements, FLOP)."""

    dense_flops_per_token: float
    expert_flops_per_token: float
    lm_head_flops_per_token: float
    prefill_attention_flops_per_pair: float
    decode_attention_flops_per_pair: float
    dense_weight_elements: float
    expert_weight_elements: float
    num_moe_layers: int
    num_experts: int
    experts_per_token: int
    kv_elements_per_token: float
    hidden_size: int


def _attention_dims(model: ModelSpec, absorbed: bool) -> tuple[int, int]:
    """(qk_dim, v_dim) per head of the attention kernel."""
    if model.is_mla:
        rope = int(model.qk_rope_head_dim or 0)
        if absorbed:
            return int(model.kv_lora_rank or 0) + rope, int(model.kv_lora_rank or 0)
        return int(model.qk_nope_head_dim or 0) + rope, int(model.v_head_dim or model.head_size)
    return model.head_size, model.head_size


def token_costs(model: ModelSpec) -> TokenCosts:
    """Per-token FLOPs and per-step weight elements of ``model`` (no sharding)."""
    counts = parameter_counts(model)
    layers = model.num_hidden_layers
    heads = model.num_attention_heads
    routed = counts.experts_per_token * counts.expert * counts.num_moe_layers
    dense_params = counts.active - counts.embedding - counts.output - routed
    qk_p, v_p = _attention_dims(model, absorbed=False)
    qk_d, v_d = _attention_dims(model, absorbed=True)
    all_experts = counts.num_experts * counts.expert * counts.num_moe_layers
    return TokenCosts(
        dense_flops_per_token=2.0 * dense_params,
        expert_flops_per_token=2.0 * routed,
        lm_head_flops_per_token=2.0 * model.vocab_size * model.hidden_size,
        prefill_attention_flops_per_pair=2.0 * layers * heads * (qk_p + v_p),
        decode_attention_flops_per_pair=2.0 * layers * heads * (qk_d + v_d),
        dense_weight_elements=float(counts.total - counts.embedding - all_experts)
        + (counts.embedding if model.tie_word_embeddings else 0.0),
        expert_weight_elements=float(counts.expert),
        num_moe_layers=counts.num_moe_layers,
        num_experts=counts.num_experts,
        experts_per_token=counts.experts_per_token,
        kv_elements_per_token=float(layers * kv_elements_per_token_per_layer(model)),
        hidden_size=model.hidden_size,
    )


def prefill_attention_pairs(chunk_tokens: float, prior_tokens: float) -> float:
    """Causal (query, key) pairs of a prompt chunk of ``chunk_tokens`` after ``prior_tokens`` cached."""
    return chunk_tokens * prior_tokens + chunk_tokens * (chunk_tokens + 1.0) / 2.0


def expected_distinct_experts(num_experts: int, top_k: int, tokens: float) -> float:
    """Expected number of distinct experts that ``tokens`` tokens, each routed uniformly to ``top_k``
    of ``num_experts``, touch: ``E (1 - (1 - k/E)^T)`` (occupancy; exact for uniform routing)."""
    if num_experts <= 0 or tokens <= 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** tokens)


@dataclass(frozen=True, slots=True)
class StepWork:
    """What one step computes: new tokens, attention pairs, tokens that need logits, KV tokens read."""

    tokens: float
    prefill_pairs: float = 0.0
    decode_pairs: float = 0.0
    logits_tokens: float = 0.0
    kv_tokens_read: float = 0.0


@dataclass(frozen=True, slots=True)
class StepCost:
    """Whole-model FLOPs and elements one step moves, by part (FLOP, elements, tokens); sharding over
    GPUs is the caller's (:mod:`fabricsim.engine.inference.step`)."""

    layer_linear_flops: float
    """Matmuls of the transformer layers: non-expert plus routed experts, all layers."""
    lm_head_flops: float
    attention_flops: float
    dense_weight_elements: float
    """Non-expert weights read once per step."""
    expert_weight_elements: float
    """Weights of the expected distinct routed experts the step touches, all MoE layers."""
    kv_tokens: float
    """KV-cache tokens read (context attended) plus written (the new tokens)."""
    kv_elements: float

    @property
    def flops(self) -> float:
        return self.layer_linear_flops + self.lm_head_flops + self.attention_flops


def step_cost(costs: TokenCosts, work: StepWork) -> StepCost:
    """FLOPs and elements of one step of ``work`` on the whole model (see the module docstring)."""
    experts = expected_distinct_experts(costs.num_experts, costs.experts_per_token, work.tokens)
    kv_tokens = work.kv_tokens_read + work.tokens
    return StepCost(
        layer_linear_flops=work.tokens * (costs.dense_flops_per_token + costs.expert_flops_per_token),
        lm_head_flops=work.logits_tokens * costs.lm_head_flops_per_token,
        attention_flops=work.prefill_pairs * costs.prefill_attention_flops_per_pair
        + work.decode_pairs * costs.decode_attention_flops_per_pair,
        dense_weight_elements=costs.dense_weight_elements,
        expert_weight_elements=experts * costs.num_moe_layers * costs.expert_weight_elements,
        kv_tokens=kv_tokens,
        kv_elements=kv_tokens * costs.kv_elements_per_token,
    )


def step_flops(costs: TokenCosts, work: StepWork) -> float:
    """Whole-model FLOPs of one step (FLOP)."""
    return step_cost(costs, work).flops


def step_bytes(costs: TokenCosts, work: StepWork, weight_bytes: float, kv_bytes: float) -> float:
    """Whole-model HBM bytes of weights and KV read and written by one step (one model replica, bytes).

    ``weight_bytes`` and ``kv_bytes`` are bytes per element of the weights and of the KV cache.
    """
    cost = step_cost(costs, work)
    return (cost.dense_weight_elements + cost.expert_weight_elements) * weight_bytes + cost.kv_elements * kv_bytes
