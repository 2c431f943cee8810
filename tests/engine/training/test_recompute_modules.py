"""Selective recomputation by module (Megatron-Core ``--recompute-modules``)."""

import pytest

from fabricsim import api
from fabricsim.catalog import load_model
from fabricsim.errors import FabricsimError
from fabricsim.specs import Recompute
from fabricsim.transformer.flops import model_dims, recompute_flops

DSV3 = ("deepseek-v3", "dgx-h100", 512, 4096, 4096)
NVIDIA_512 = {"tp": 2, "pp": 8, "dp": 32, "ep": 64}
GPT3 = ("gpt3-175b", "dgx-a100", 1024, 1536, 2048)
GPT3_LAYOUT = {"tp": 8, "pp": 8, "zero": 1}


def _memory(result) -> float:
    return dict(result.memory_breakdown_bytes)["activations"]


def _recompute(result) -> float:
    return dict(result.time_breakdown_s)["recompute_s"]


def test_the_fine_grained_preset_is_its_three_modules() -> None:
    preset = api.train(*DSV3, **NVIDIA_512, recompute="fine-grained")
    listed = api.train(*DSV3, **NVIDIA_512, recompute="selective", recompute_modules="layernorm,mla_up_proj,moe_act")
    assert _memory(listed) == _memory(preset) and _recompute(listed) == _recompute(preset)
    assert listed.step_time_s == preset.step_time_s and listed.hfu == preset.hfu


def test_a_recomputed_dense_mlp_trades_its_activations_for_its_forward() -> None:
    """``mlp`` on a dense GPT: the GeLU input and the FC2 input (4f per token, 16-bit, TP-split) are
    dropped; backward runs the MLP's GEMMs again (hardware FLOPs grow by 2 x tokens x MLP params)."""
    base = api.train(*GPT3, **GPT3_LAYOUT, recompute="selective", recompute_modules="core_attn")
    mlp = api.train(*GPT3, **GPT3_LAYOUT, recompute="selective", recompute_modules=["core_attn", "mlp"])
    assert _memory(mlp) < _memory(base) and _recompute(mlp) > _recompute(base)
    assert mlp.step_time_s > base.step_time_s and mlp.hfu > base.hfu
    dims = model_dims(load_model("gpt3-175b"))
    extra = recompute_flops(dims, 1, 2048, Recompute.SELECTIVE, frozenset({"mlp"}))
    assert extra == pytest.approx(2.0 * 2048 * dims.layers * dims.dense_mlp_params)


def test_mlp_skips_moe_layers_and_shared_experts_are_their_own_module() -> None:
    """Megatron-Core's ``mlp`` module recomputes dense layers only (transformer_layer.py); DeepSeek-V3's
    MoE layers drop their shared experts' activations under ``shared_experts``."""
    core = api.train(*DSV3, **NVIDIA_512, recompute="selective")
    mlp = api.train(*DSV3, **NVIDIA_512, recompute="selective", recompute_modules="core_attn,mlp")
    shared = api.train(*DSV3, **NVIDIA_512, recompute="selective", recompute_modules="core_attn,shared_experts")
    assert _memory(mlp) == _memory(core)  # the largest stage holds MoE layers only
    assert _memory(shared) < _memory(core) and _recompute(shared) > _recompute(core)


@pytest.mark.parametrize(("recompute", "modules", "message"), [
    ("selective", "core_attn,bogus", "unknown module"),
    ("none", "mlp", "selective"),
    ("full", "mlp", "selective"),
])
def test_bad_modules_are_refused(recompute: str, modules: str, message: str) -> None:
    with pytest.raises(FabricsimError, match=message):
        api.train(*GPT3, **GPT3_LAYOUT, recompute=recompute, recompute_modules=modules)
