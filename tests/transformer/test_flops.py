"""FLOP counts against the closed forms of Narayanan et al. (SC'21) and Korthikanti et al. (2022)."""

import math

import pytest

from fabricsim.catalog import load_model
from fabricsim.specs import ModelSpec, Recompute
from fabricsim.transformer.flops import (
    attention_core_flops,
    hardware_flops_per_step,
    korthikanti_model_flops,
    layer_forward_flops,
    model_dims,
    model_flops_per_step,
    narayanan_full_recompute_flops,
)


def gpt(hidden: int, layers: int, heads: int, vocab: int = 51200) -> ModelSpec:
    return ModelSpec(
        name="gpt",
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        vocab_size=vocab,
    )


@pytest.mark.parametrize(("hidden", "layers", "heads"), [(2304, 24, 24), (12288, 96, 96), (25600, 128, 160)])
def test_full_recompute_matches_narayanan(hidden: int, layers: int, heads: int) -> None:
    dims = model_dims(gpt(hidden, layers, heads))
    ours = hardware_flops_per_step(dims, 512, 2048, Recompute.FULL)
    assert math.isclose(ours, narayanan_full_recompute_flops(512, 2048, layers, hidden, 51200), rel_tol=1e-12)


@pytest.mark.parametrize(("hidden", "layers", "heads"), [(6144, 48, 64), (20480, 105, 128)])
def test_model_flops_match_korthikanti(hidden: int, layers: int, heads: int) -> None:
    dims = model_dims(gpt(hidden, layers, heads))
    ours = model_flops_per_step(dims, 64, 2048)
    assert math.isclose(ours, korthikanti_model_flops(64, 2048, layers, hidden, 51200), rel_tol=1e-12)


def test_selective_recompute_adds_only_the_attention_core() -> None:
    dims = model_dims(gpt(4096, 32, 32))
    extra = hardware_flops_per_step(dims, 8, 2048, Recompute.SELECTIVE) - model_flops_per_step(dims, 8, 2048)
    assert math.isclose(extra, 32 * attention_core_flops(dims, 8, 2048))
    assert hardware_flops_per_step(dims, 8, 2048, Recompute.NONE) == model_flops_per_step(dims, 8, 2048)


def test_gqa_and_swiglu_layer_flops() -> None:
    model = load_model("llama3-70b")
    dims = model_dims(model)
    h, d, kv, f = model.hidden_size, model.head_size, model.kv_heads, model.intermediate_size
    attention_params = 2 * h * h + 2 * h * kv * d
    linear = 2 * 2048 * (attention_params + 3 * h * f)
    core = 2 * 2048 * 2048 * model.num_attention_heads * 2 * d
    assert layer_forward_flops(dims, 1, 2048, moe=False) == pytest.approx(linear + core)


def test_moe_counts_only_routed_and_shared_experts() -> None:
    model = load_model("deepseek-v3")
    dims = model_dims(model)
    expert = 3 * model.hidden_size * model.moe_intermediate_size
    active = model.hidden_size * 256 + (8 + 1) * expert
    assert dims.moe_active_mlp_params == active
    dense = layer_forward_flops(dims, 1, 4096, moe=False)
    moe = layer_forward_flops(dims, 1, 4096, moe=True)
    assert moe - dense == pytest.approx(2 * 4096 * (active - dims.dense_mlp_params))
