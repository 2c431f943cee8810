"""KV-cache sizes: exact bytes per token, paged allocation, largest batch that fits (layer L4).

Bytes per token and layer:

* MHA / GQA / MQA: ``2 (K and V) x kv_heads x head_dim x dtype bytes`` (Shazeer 2019 for MQA,
  Ainslie et al. 2023 for GQA: only the key/value heads are cached).
* MLA (DeepSeek-V2/V3, arXiv 2405.04434 sec. 2.1.3): the compressed latent plus the decoupled RoPE
  key, ``(kv_lora_rank + qk_rope_head_dim) x dtype bytes`` -- per layer and token, *not* per head.

Tensor parallelism splits the key/value heads (each rank keeps at least one, so a TP degree above
the number of KV heads replicates them, as TensorRT-LLM and vLLM do); the MLA latent has no head
axis and is replicated on every TP rank. Pipeline parallelism splits the layers.

Paged allocation (vLLM's PagedAttention, Kwon et al. SOSP'23) hands out fixed blocks of
``KV_BLOCK_TOKENS`` tokens, so a sequence occupies ``ceil(tokens / block) x block`` token slots.
"""

from __future__ import annotations

import math

from fabricsim.specs import DTYPE_BYTES, Dtype, ModelSpec

KV_BLOCK_TOKENS = 16
"""Tokens per KV block: vLLM's default ``block_size`` (vllm/config CacheConfig)."""


def kv_elements_per_token_per_layer(model: ModelSpec) -> int:
    """Cached elements per token in one layer (whole layer, before any sharding)."""
    if model.is_mla:
        return int(model.kv_lora_rank or 0) + int(model.qk_rope_head_dim or 0)
    return 2 * model.kv_heads * model.head_size


def kv_bytes_per_token(model: ModelSpec, kv_dtype: Dtype | str) -> float:
    """KV bytes one token adds to the cache of the whole model (all layers), in bytes."""
    return model.num_hidden_layers * kv_elements_per_token_per_layer(model) * DTYPE_BYTES[Dtype(kv_dtype)]


def kv_bytes_per_token_per_gpu(
    model: ModelSpec, kv_dtype: Dtype | str, tensor_parallel: int, pipeline_parallel: int
) -> float:
    """KV bytes one token adds on the most loaded GPU of a TP x PP group.

    GQA/MHA heads are split over TP ranks (at least one head each); MLA latents are replicated.
    The layers of the largest pipeline stage, ``ceil(layers / pp)``, count.
    """
    layers = math.ceil(model.num_hidden_layers / pipeline_parallel)
    if model.is_mla:
        per_layer = kv_elements_per_token_per_layer(model)
    else:
        heads = max(1, math.ceil(model.kv_heads / tensor_parallel))
        per_layer = 2 * heads * model.head_size
    return layers * per_layer * DTYPE_BYTES[Dtype(kv_dtype)]


def paged_tokens(tokens: int, block_tokens: int = KV_BLOCK_TOKENS) -> int:
    """Token slots a sequence of ``tokens`` occupies in a paged cache (whole blocks)."""
    return -(-int(tokens) // block_tokens) * block_tokens


def max_sequences(budget_bytes: float, bytes_per_token: float, tokens_per_sequence: int,
                  block_tokens: int = KV_BLOCK_TOKENS) -> int:
    """Largest number of sequences of ``tokens_per_sequence`` whose paged KV fits ``budget_bytes``."""
    if budget_bytes <= 0 or bytes_per_token <= 0:
        return 0
    per_sequence = paged_tokens(tokens_per_sequence, block_tokens) * bytes_per_token
    return int(budget_bytes // per_sequence)


def capacity_tokens(budget_bytes: float, bytes_per_token: float, block_tokens: int = KV_BLOCK_TOKENS) -> int:
    """Whole-block token slots that fit ``budget_bytes`` (0 when nothing fits)."""
    if budget_bytes <= 0 or bytes_per_token <= 0:
        return 0
    blocks = int(budget_bytes // (bytes_per_token * block_tokens))
    return blocks * block_tokens
