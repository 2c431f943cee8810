"""KV-cache bytes per token (MHA/GQA/MQA/MLA), sharding, paging and the largest batch."""

import pytest

from fabricsim.catalog import load_model
from fabricsim.specs import ModelSpec
from fabricsim.transformer.kv_cache import (
    capacity_tokens,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    max_sequences,
    paged_tokens,
)


def tiny(kv_heads):
    return ModelSpec(name="t", hidden_size=1024, num_hidden_layers=4, num_attention_heads=16,
                     num_key_value_heads=kv_heads, intermediate_size=4096, vocab_size=1000)


def test_gqa_llama3_8b_bf16_is_128_kib_per_token():
    # 2 (K,V) x 32 layers x 8 KV heads x 128 dims x 2 B
    assert kv_bytes_per_token(load_model("llama3.1-8b"), "bf16") == 2 * 32 * 8 * 128 * 2


def test_mha_and_mqa_scale_with_kv_heads():
    assert kv_bytes_per_token(tiny(16), "bf16") == 2 * 4 * 16 * 64 * 2
    assert kv_bytes_per_token(tiny(1), "fp8") == 2 * 4 * 1 * 64 * 1


def test_mla_caches_latent_plus_rope_per_layer_not_per_head():
    model = load_model("deepseek-v3")
    assert kv_bytes_per_token(model, "bf16") == 61 * (512 + 64) * 2
    # replicated, not split, over TP ranks
    assert kv_bytes_per_token_per_gpu(model, "bf16", 8, 1) == kv_bytes_per_token(model, "bf16")


def test_tp_splits_kv_heads_but_keeps_at_least_one():
    model = load_model("llama3.1-8b")
    full = kv_bytes_per_token(model, "bf16")
    assert kv_bytes_per_token_per_gpu(model, "bf16", 8, 1) == pytest.approx(full / 8)
    assert kv_bytes_per_token_per_gpu(model, "bf16", 16, 1) == pytest.approx(full / 8)
    assert kv_bytes_per_token_per_gpu(model, "bf16", 1, 2) == pytest.approx(full / 2)


def test_paging_and_capacity():
    assert paged_tokens(1) == 16 and paged_tokens(16) == 16 and paged_tokens(17) == 32
    assert max_sequences(32 * 100.0, 100.0, 17) == 1
    assert max_sequences(0.0, 100.0, 17) == 0
    assert capacity_tokens(100.0 * 40, 100.0) == 32
