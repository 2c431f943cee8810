"""The optimizer step's HBM traffic (Megatron's multi-tensor passes; transformer/constants.py)."""

from __future__ import annotations

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import estimate_training
from fabricsim.engine.training.memory import stage_parameters
from fabricsim.specs import ParallelLayout
from fabricsim.transformer.flops import model_dims
from fabricsim.workload.training import TrainingOptions

H100 = load_system("dgx-h100")
MODEL = load_model("llama3-8b")


def _optimizer_s(dtype: str, zero: int, dp: int, fp32_grads: bool | None = None) -> tuple[float, float]:
    layout = ParallelLayout(data_parallel=dp, zero_stage=zero, dtype=dtype)
    estimate = estimate_training(MODEL, H100, layout, 8 * dp, 4096, TrainingOptions(grad_reduce_in_fp32=fp32_grads))
    dense, expert = stage_parameters(model_dims(MODEL), layout)
    return estimate.time.optimizer_s, dense + expert


def test_per_parameter_bytes_on_the_shard_and_on_the_whole_gradient_buffer() -> None:
    """Per parameter a rank updates: clipping norm 4 + Adam 28 + copy to the 16-bit weights 6 = 38 B
    (+ 8 B unscale and non-finite check under fp16 loss scaling; + 6 B to copy 16-bit gradients into
    fp32 main gradients); per parameter of the local replica (the buffer is not sharded below
    ZeRO-3), four passes of its gradient's bytes: scaled by 1/dp (read + write) and NaN-checked
    (read) before the reduction, zeroed after the step. fp16 runs keep fp16 gradients by default,
    as Megatron-LM."""
    hbm = H100.device.kernels.hbm_achieved_Bps
    seconds, params = _optimizer_s("bf16", 0, 8)
    assert seconds == pytest.approx(params * (38 + 4 * 4) / hbm, rel=1e-9)
    seconds, params = _optimizer_s("fp16", 0, 8, fp32_grads=True)
    assert seconds == pytest.approx(params * (38 + 8 + 4 * 4) / hbm, rel=1e-9)
    seconds, params = _optimizer_s("fp16", 0, 8)
    assert seconds == pytest.approx(params * (38 + 8 + 6 + 4 * 2) / hbm, rel=1e-9)
    seconds, params = _optimizer_s("bf16", 1, 8, fp32_grads=False)
    assert seconds == pytest.approx(params * ((38 + 6) / 8 + 4 * 2) / hbm, rel=1e-9)
    seconds, params = _optimizer_s("bf16", 1, 8)
    assert seconds == pytest.approx(params * (38 / 8 + 4 * 4) / hbm, rel=1e-9)
    seconds, params = _optimizer_s("bf16", 3, 8)
    assert seconds == pytest.approx(params * (38 + 4 * 4) / 8 / hbm, rel=1e-9)
    seconds, params = _optimizer_s("bf16", 0, 1)  # one replica: nothing to average
    assert seconds == pytest.approx(params * (38 + 4 * 2) / hbm, rel=1e-9)
