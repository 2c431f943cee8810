"""Multi-token prediction (DeepSeek-V3 sec. 2.2; Megatron-Core ``--mtp-num-layers``): FLOPs, the last
pipeline stage's time and memory."""

from __future__ import annotations

import pytest

from fabricsim import api
from fabricsim.catalog import load_model
from fabricsim.errors import FabricsimError
from fabricsim.transformer.flops import (
    layer_forward_flops,
    logits_forward_flops,
    model_dims,
    model_flops_per_step,
    mtp_forward_flops,
)

LLAMA = ("llama3-8b", "dgx-h100", 8, 64, 4096)


def test_mtp_flops_are_a_projection_a_layer_and_the_output_layer_again() -> None:
    dims = model_dims(load_model("deepseek-v3"))
    tokens = 2 * 4096
    expected = 2.0 * tokens * 2 * dims.hidden**2 + layer_forward_flops(dims, 2, 4096, moe=True)
    expected += logits_forward_flops(dims, 2, 4096)
    assert mtp_forward_flops(dims, 2, 4096) == pytest.approx(expected, rel=1e-12)
    extra = model_flops_per_step(dims, 2, 4096, mtp_layers=2) - model_flops_per_step(dims, 2, 4096)
    assert extra == pytest.approx(3.0 * 2 * expected, rel=1e-12)


def test_one_depth_on_one_stage_costs_about_a_layer_and_an_output_layer() -> None:
    """Llama 3 8B on 8 GPUs (pp 1): one MTP depth adds one layer (1/32 of the layers), the 2h -> h
    projection (+0.5%) and a second output layer of 128k logits (+7.5% of the FLOPs) with its loss
    (Megatron-Core's unfused default: 38 B per logit): forward compute grows by 8-20%; the weights by
    one layer plus the projection."""
    base, mtp = api.train(*LLAMA), api.train(*LLAMA, mtp_layers=1)
    forward = [dict(r.time_breakdown_s)["forward_compute_s"] for r in (base, mtp)]
    assert 1.08 < forward[1] / forward[0] < 1.20
    weights = [dict(r.memory_breakdown_bytes)["weights"] for r in (base, mtp)]
    dims = model_dims(load_model("llama3-8b"))
    layer = dims.attention_params + dims.dense_mlp_params + 2 * dims.hidden
    assert weights[1] - weights[0] == pytest.approx(2.0 * (layer + 2 * dims.hidden**2 + 2 * dims.hidden), rel=1e-6)
    assert mtp.model_tflops_per_gpu > 0 and mtp.mfu > 0
    assert dict(mtp.options)["mtp_layers"] == 1


def test_mtp_slows_a_pipeline_only_through_its_last_stage() -> None:
    """DeepSeek-V3 on 512 H100 (pp 8, 61 layers): the last stage holds 7 layers + the output layer;
    one MTP depth (an MoE layer + a second output layer) makes it the slowest stage."""
    layout = {"tp": 2, "pp": 8, "dp": 32, "ep": 64, "recompute": "fine-grained"}
    base = api.train("deepseek-v3", "dgx-h100", 512, 4096, 4096, **layout)
    mtp = api.train("deepseek-v3", "dgx-h100", 512, 4096, 4096, **layout, mtp_layers=1)
    assert mtp.step_time_s > 1.05 * base.step_time_s
    assert dict(mtp.time_breakdown_s)["ep_comm_s"] > dict(base.time_breakdown_s)["ep_comm_s"]


@pytest.mark.parametrize("bad", [-1, 9, 1.5, True])
def test_bad_depth_is_refused_naming_the_field(bad) -> None:
    with pytest.raises(FabricsimError, match="mtp-layers"):
        api.train(*LLAMA, mtp_layers=bad)
