"""Layer compute model on kernel-level rates."""

import dataclasses

from fabricsim.catalog import load_model, load_system
from fabricsim.transformer.compute import (
    CROSS_ENTROPY_IMPLS,
    ShardShape,
    device_rates,
    gemm_efficiency,
    gemm_time_s,
    layer_forward_times,
    logits_times_s,
    permutation_bytes,
)
from fabricsim.transformer.flops import model_dims

H100 = load_system("dgx-h100").device


def test_efficiency_grows_with_size_and_is_bounded() -> None:
    rates = device_rates(H100, "bf16")
    small, large = gemm_efficiency(rates, 2048, 256, 1024), gemm_efficiency(rates, 8192, 8192, 8192)
    assert small < large < 0.95


def test_gemm_time_at_least_flops_over_peak_and_bytes_over_bandwidth() -> None:
    rates = device_rates(H100, "bf16")
    m = n = k = 4096
    time_s = gemm_time_s(rates, m, n, k)
    assert time_s >= 2 * m * n * k / H100.peak("bf16")
    skinny = gemm_time_s(rates, 1, 8192, 8192)
    assert skinny >= (8192 * 8192 * 2) / H100.hbm_bandwidth_Bps


def test_fp8_speeds_up_gemms_and_pays_for_quantisation() -> None:
    dims = model_dims(load_model("llama3-70b"))
    shape = ShardShape(1, 8192, 8, 1, 1, True, True)
    bf16 = layer_forward_times(dims, device_rates(H100, "bf16"), shape, False)
    fp8 = layer_forward_times(dims, device_rates(H100, "fp8"), shape, False)
    assert fp8.linear_s < 0.65 * bf16.linear_s
    assert fp8.attention_s == bf16.attention_s  # attention stays 16-bit
    assert fp8.elementwise_s > bf16.elementwise_s  # cast/transpose kernels
    current = layer_forward_times(dims, device_rates(H100, "fp8", "current"), shape, False)
    assert current.elementwise_s > fp8.elementwise_s  # current scaling adds an amax pass


def test_high_tensor_parallelism_is_less_efficient_per_flop() -> None:
    dims = model_dims(load_model("llama3-8b"))
    rates = device_rates(H100, "bf16")
    tp1 = layer_forward_times(dims, rates, ShardShape(1, 4096, 1, 1, 1, False, True), False)
    tp8 = layer_forward_times(dims, rates, ShardShape(1, 4096, 8, 1, 1, False, True), False)
    assert tp8.linear_s * 8 > tp1.linear_s * 1.02


def test_unfused_attention_pays_for_the_score_matrix() -> None:
    dims = model_dims(load_model("gpt3-175b"))
    rates = device_rates(H100, "bf16")
    flash = layer_forward_times(dims, rates, ShardShape(1, 2048, 8, 1, 1, True, True), False)
    unfused = layer_forward_times(dims, rates, ShardShape(1, 2048, 8, 1, 1, True, False), False)
    assert unfused.attention_s > flash.attention_s
    assert unfused.attention_backward_s > unfused.attention_s


def test_rope_is_charged_only_to_rope_models() -> None:
    """Llama rotates q and k (4 B per element each way); GPT-3 uses learned positions."""
    rates = device_rates(H100, "bf16")
    shape = ShardShape(1, 4096, 1, 1, 1, False, True)
    llama = model_dims(load_model("llama3-8b"))
    with_rope = layer_forward_times(llama, rates, shape, False)
    without = layer_forward_times(dataclasses.replace(llama, rope_dim=0), rates, shape, False)
    rotated_bytes = 4096 * (llama.heads + llama.kv_heads) * llama.rope_dim * 4.0
    extra = with_rope.elementwise_s - without.elementwise_s
    assert abs(extra - (rotated_bytes / rates.hbm_Bps + 5e-6)) < 1e-9
    assert model_dims(load_model("gpt3-175b")).rope_dim == 0


def test_moe_token_permutation_moves_every_routed_copy() -> None:
    """DeepSeek-V3 (k = 8, h = 7168) at tp 2 with sequence parallelism, ep 64, expert TP 1: each
    GPU permutes its 2,048 tokens into 16,384 routed copies and back (2 x (2,048 + 16,384) x h x
    2 B per pass); the alltoall dispatcher also sorts the pairs it receives by local expert (4
    experts per GPU) after the exchange and back, which DeepEP's layout does not need."""
    dims = model_dims(load_model("deepseek-v3"))
    rates = device_rates(H100, "bf16")
    alltoall = ShardShape(1, 4096, 2, 1, 64, True, True, expert_tensor_parallel=1)
    deepep = dataclasses.replace(alltoall, sort_chunks=False)
    moved, kernels = permutation_bytes(dims, deepep, 4096.0)
    assert moved == 2 * (2048 + 16384) * 7168 * 2.0 and kernels == 2.0
    sorted_moved, sorted_kernels = permutation_bytes(dims, alltoall, 4096.0)
    assert sorted_moved - moved == 4 * 16384 * 7168 * 2.0 and sorted_kernels == 4.0
    dense = layer_forward_times(dims, rates, deepep, False)
    with_sort = layer_forward_times(dims, rates, alltoall, True)
    without_sort = layer_forward_times(dims, rates, deepep, True)
    assert with_sort.elementwise_s > without_sort.elementwise_s > dense.elementwise_s
    assert with_sort.elementwise_backward_s - without_sort.elementwise_backward_s > 0


def test_cross_entropy_implementations_in_order_of_bytes() -> None:
    """Unfused (fp32 copies in six kernels) > native (four fused kernels) > Transformer Engine's
    one-read Triton kernel, forward; backward the fp32 ones also cast the gradient back."""
    dims = model_dims(load_model("llama3-8b"))
    rates = device_rates(H100, "bf16")
    base = ShardShape(1, 8192, 1, 1, 1, False, True)
    times = {i: logits_times_s(dims, rates, dataclasses.replace(base, cross_entropy=i)) for i in CROSS_ENTROPY_IMPLS}
    assert times["unfused"][0] > times["native"][0] > times["te"][0]
    assert times["unfused"][1] == times["native"][1] > times["te"][1]
    logits = 8192 * dims.vocab
    assert abs((times["unfused"][0] - times["te"][0]) - 36.0 * logits / rates.hbm_Bps - 4 * 5e-6) < 1e-9
