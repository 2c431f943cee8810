"""Transformer model specification in Hugging Face ``config.json`` terms (layer L1).

Field names are the Hugging Face keys so a user can pass a real ``config.json``. Dense models use
``intermediate_size``; MoE models add ``num_local_experts`` (alias ``n_routed_experts``),
``num_experts_per_tok``, ``moe_intermediate_size``, ``n_shared_experts``, ``first_k_dense_replace``;
MLA (DeepSeek) adds ``kv_lora_rank``, ``q_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``,
``v_head_dim``. ``hidden_act`` gelu → 2-matrix MLP, silu/swiglu → 3-matrix gated MLP.
"""

from typing import Annotated

from pydantic import AliasChoices, BeforeValidator, Field, model_validator

from fabricsim.specs.base import FrozenSpec


def _not_bool(value: object) -> object:
    """Refuse a JSON/YAML ``true``/``false`` where a count is expected (pydantic reads it as 1/0)."""
    if isinstance(value, bool):
        raise ValueError(f"must be an integer, got {str(value).lower()}")
    return value


# Sizes a model file may give: ten-fold the largest published models (hidden 2^14-2^15, 128 layers,
# 256 experts, 10^6-token contexts), so a typo or 1e30 is refused before it sizes any array or loop.
_Count = Annotated[int, BeforeValidator(_not_bool)]
PositiveInt = Annotated[_Count, Field(gt=0, le=2**24)]
NonNegativeInt = Annotated[_Count, Field(ge=0, le=2**24)]
Layers = Annotated[_Count, Field(gt=0, le=2**16)]

GATED_ACTIVATIONS = frozenset({"silu", "swiglu", "swish", "geglu", "gelu_glu"})


class ModelSpec(FrozenSpec):
    """A decoder-only transformer."""

    name: str
    hidden_size: PositiveInt
    num_hidden_layers: Layers
    num_attention_heads: PositiveInt
    num_key_value_heads: PositiveInt | None = None
    head_dim: PositiveInt | None = None
    intermediate_size: PositiveInt
    vocab_size: PositiveInt
    hidden_act: str = "gelu"
    max_position_embeddings: Annotated[_Count, Field(gt=0, le=2**30)] = 2048
    tie_word_embeddings: bool = False
    # Mixture of experts
    num_local_experts: NonNegativeInt = Field(
        default=0, validation_alias=AliasChoices("num_local_experts", "n_routed_experts")
    )
    num_experts_per_tok: NonNegativeInt = 0
    moe_intermediate_size: PositiveInt | None = None
    n_shared_experts: NonNegativeInt = 0
    first_k_dense_replace: NonNegativeInt = 0
    # Multi-head latent attention (DeepSeek-V2/V3)
    kv_lora_rank: PositiveInt | None = None
    q_lora_rank: PositiveInt | None = None
    qk_rope_head_dim: NonNegativeInt | None = None
    qk_nope_head_dim: NonNegativeInt | None = None
    v_head_dim: PositiveInt | None = None
    sources: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> "ModelSpec":
        if self.head_dim is None and self.hidden_size < self.num_attention_heads:
            # head_size = hidden_size // heads would be 0: attention with 0-wide heads
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be at least num_attention_heads "
                f"({self.num_attention_heads}), or give head_dim"
            )
        if self.num_key_value_heads is not None and self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.num_local_experts and not (0 < self.num_experts_per_tok <= self.num_local_experts):
            raise ValueError("num_experts_per_tok must be in 1..num_local_experts for an MoE model")
        if self.first_k_dense_replace > self.num_hidden_layers:
            raise ValueError("first_k_dense_replace exceeds num_hidden_layers")
        return self

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def head_size(self) -> int:
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def gated_mlp(self) -> bool:
        return self.hidden_act.lower() in GATED_ACTIVATIONS

    @property
    def is_moe(self) -> bool:
        return self.num_local_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def num_moe_layers(self) -> int:
        return self.num_hidden_layers - self.first_k_dense_replace if self.is_moe else 0

    @property
    def num_dense_layers(self) -> int:
        return self.num_hidden_layers - self.num_moe_layers

    @property
    def expert_intermediate_size(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size
