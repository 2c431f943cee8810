"""Activation and model-state memory against Korthikanti et al. (2022) and ZeRO (SC'20)."""

import pytest

from fabricsim.specs import ModelSpec, Recompute
from fabricsim.transformer.compute import ShardShape
from fabricsim.transformer.flops import model_dims
from fabricsim.transformer.memory import layer_activation_bytes, state_bytes

S, B, H, A = 2048, 2, 6144, 64
DIMS = model_dims(
    ModelSpec(
        name="gpt",
        hidden_size=H,
        num_hidden_layers=48,
        num_attention_heads=A,
        intermediate_size=4 * H,
        vocab_size=51200,
    )
)


def shape(tp: int, sp: bool, flash: bool = False) -> ShardShape:
    return ShardShape(
        micro_batch=B,
        seq_len=S,
        tensor_parallel=tp,
        context_parallel=1,
        expert_parallel=1,
        sequence_parallel=sp,
        flash_attention=flash,
    )


def test_no_parallelism_is_34sbh_plus_5as2b() -> None:
    expected = S * B * H * (34 + 5 * A * S / H)
    assert layer_activation_bytes(DIMS, shape(1, False), Recompute.NONE, False) == pytest.approx(expected)


def test_tensor_parallel_formula() -> None:
    t = 8
    expected = S * B * H * (10 + 24 / t + 5 * A * S / (H * t))
    assert layer_activation_bytes(DIMS, shape(t, False), Recompute.NONE, False) == pytest.approx(expected)


def test_sequence_parallel_and_selective() -> None:
    t = 8
    assert layer_activation_bytes(DIMS, shape(t, True), Recompute.NONE, False) == pytest.approx(
        S * B * H / t * (34 + 5 * A * S / H)
    )
    assert layer_activation_bytes(DIMS, shape(t, True), Recompute.SELECTIVE, False) == pytest.approx(S * B * H / t * 34)


def test_full_recompute_keeps_the_layer_input() -> None:
    assert layer_activation_bytes(DIMS, shape(8, True), Recompute.FULL, False) == pytest.approx(2 * S * B * H / 8)
    assert layer_activation_bytes(DIMS, shape(8, False), Recompute.FULL, False) == pytest.approx(2 * S * B * H)


def test_flash_attention_has_no_s_squared_term() -> None:
    flash = layer_activation_bytes(DIMS, shape(8, True, flash=True), Recompute.NONE, False)
    assert flash < S * B * H / 8 * 35


def test_zero_stages_shard_states() -> None:
    params = 1e9
    stages = [state_bytes(params, 0.0, (z, 8, 8), 4.0) for z in range(4)]
    assert stages[0].total == pytest.approx(18 * params)
    assert stages[1].optimizer == pytest.approx(12 * params / 8)
    assert stages[2].gradients == pytest.approx(4 * params / 8)
    assert stages[3].weights == pytest.approx(2 * params / 8)
    assert [s.total for s in stages] == sorted((s.total for s in stages), reverse=True)


def test_16_bit_gradients_follow_megatrons_bytes_per_parameter() -> None:
    """Megatron-LM docs/user-guide/features/dist_optimizer.md: fp16 parameters with fp16 gradients
    take 20 B per parameter (4 + 16/d with the distributed optimizer), bf16 parameters with fp32
    gradients 18 (6 + 12/d)."""
    params, d = 1e9, 8
    assert state_bytes(params, 0.0, (0, 1, 1), 2.0).total == pytest.approx(20 * params)
    assert state_bytes(params, 0.0, (1, d, d), 2.0).total == pytest.approx((4 + 16 / d) * params)
    assert state_bytes(params, 0.0, (1, d, d), 4.0).total == pytest.approx((6 + 12 / d) * params)


def test_fine_grained_recompute_drops_the_two_norm_outputs() -> None:
    """Megatron-Core ``--recompute-modules layernorm ...`` on a dense GPT layer: the QKV and MLP
    inputs (2 x 2sbh) are rebuilt; nothing else changes (moe_act and mla_up_proj do not apply)."""
    kept = layer_activation_bytes(DIMS, shape(8, True, flash=True), Recompute.NONE, False)
    fine = layer_activation_bytes(DIMS, shape(8, True, flash=True), Recompute.FINE_GRAINED, False)
    assert kept - fine == pytest.approx(4 * S * B * H / 8)


def test_fp8_recipes_keep_their_gemm_inputs_in_fp8() -> None:
    """QKV, projection, FC1 and FC2 inputs (2h + h + 2h + 4h per token on a GeLU layer) at 1 byte."""
    bf16 = layer_activation_bytes(DIMS, shape(1, False, flash=True), Recompute.NONE, False, "bf16")
    fp8 = layer_activation_bytes(DIMS, shape(1, False, flash=True), Recompute.NONE, False, "fp8")
    assert bf16 - fp8 == pytest.approx(S * B * (H + H + H + 4 * H))
