"""Kernel-level GEMM / attention model: calibration identity, kernel sweeps it was not fitted on,
fallbacks and physical bounds."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.catalog import load_device
from fabricsim.transformer import kernels
from fabricsim.transformer.kernels import attention_rates, gemm_format, gemm_rates, hbm_achieved_Bps

H100, B200, GB200, A100 = (load_device(n) for n in ("h100-sxm", "b200", "gb200", "a100-80gb"))
XLA_FLOOR_S = 5e-6  # per-GEMM floor of the XLA timing table (kernel-efficiency.md G32/G34 note)


def _rate(device, fmt, m, n, k, count=1):
    rates = gemm_rates(device, fmt)
    return 2.0 * m * n * k * count / (rates.time_s(m, n, k, count) - kernels.KERNEL_FIXED_S)


def test_efficiency_at_the_benchmark_shape_is_the_benchmark() -> None:
    """F is the device's published figure: the model returns it at the benchmark's own shape
    (up to tile quantisation, which the best shape of a sweep does not pay)."""
    for device in (A100, H100, B200, GB200):
        for fmt, bench in device.kernels.gemm.items():
            peak = kernels.format_peak(device, fmt)
            measured = bench.flops_per_s / peak
            model = gemm_rates(device, fmt).efficiency(bench.m, bench.n, bench.k, bench.batch)
            assert 0.85 * measured <= model <= measured * 1.0001, (device.name, fmt, model, measured)


def _floorless(tflops: float, m: int, n: int, k: int) -> float:
    flops = 2.0 * m * n * k
    return flops / (flops / (tflops * 1e12) - XLA_FLOOR_S)


def test_k_sweep_of_b200_is_reproduced_without_fitting() -> None:
    """TILE_OVERHEAD_S was fitted on H100 BF16 only; the B200 BF16 and FP8 K sweeps (XLA table,
    G30, floor removed) fall off at small K as the model predicts, within 15%."""
    for fmt, (k256, k4096) in {"bf16": (515, 1417), "fp8": (667, 2765)}.items():
        measured = _floorless(k256, 4096, 4096, 256) / _floorless(k4096, 4096, 4096, 4096)
        rates = gemm_rates(B200, fmt)
        model = rates.efficiency(4096, 4096, 256) / rates.efficiency(4096, 4096, 4096)
        assert abs(model / measured - 1) < 0.15, (fmt, model, measured)


def test_wave_quantisation_matches_the_batched_b200_gain() -> None:
    """4096^3 on 148 SMs leaves a partial wave; four batched problems fill it (G27 vs G28: 74% vs
    63% BF16, 1.17x)."""
    rates = gemm_rates(B200, "bf16")
    gain = rates.efficiency(4096, 4096, 4096, 4) / rates.efficiency(4096, 4096, 4096, 1)
    assert 1.05 < gain < 1.3


def test_fp8_kernel_speedup_is_shape_dependent() -> None:
    """Large FP8 GEMMs on H100 run ~1.75x BF16 (G40; MAMF 1402.6 / 794.5 = 1.77x); small-K GEMMs
    gain less (per-tile overhead doubles in K elements at twice the per-SM rate)."""
    large = _rate(H100, "fp8", 8192, 8192, 8192) / _rate(H100, "bf16", 8192, 8192, 8192)
    small_k = _rate(H100, "fp8", 8192, 8192, 512) / _rate(H100, "bf16", 8192, 8192, 512)
    assert 1.5 < large < 1.9
    assert small_k < large


def test_decode_gemm_is_bandwidth_bound() -> None:
    rates = gemm_rates(H100, "bf16")
    weight_bytes = 8192 * 8192 * 2
    expected = (weight_bytes + 8192 * 4) / hbm_achieved_Bps(H100) + kernels.KERNEL_FIXED_S
    assert math.isclose(rates.time_s(1, 8192, 8192), expected, rel_tol=1e-3)


def test_split_k_keeps_skinny_gemms_on_all_sms() -> None:
    rates = gemm_rates(H100, "fp8")
    # 256 x 4096 is 32 tiles on 132 SMs: split-K slices restore most of the occupancy
    assert rates.efficiency(256, 4096, 8192) > 0.5 * rates.efficiency(8192, 4096, 8192)


def test_formats_fall_back_along_the_documented_chain() -> None:
    assert gemm_format("fp8", "mxfp8") == "mxfp8" and gemm_format("fp8", None) == "fp8"
    assert gemm_format("fp4") == "nvfp4"
    assert kernels.gemm_benchmark(H100, "mxfp8")[0] == "fp8"  # Hopper has no MXFP8 figure
    assert kernels.gemm_benchmark(A100, "fp8")[0] == "bf16"
    bare = H100.model_copy(update={"kernels": None})
    assert gemm_rates(bare, "bf16").fraction > 0 and attention_rates(bare).kernel == "default"


def test_attention_efficiency_grows_with_sequence_and_head_dim() -> None:
    """FA3 (A6-A8): longer sequences and larger heads run closer to peak; causal costs most at
    short sequences."""
    rates = attention_rates(H100)
    assert rates.efficiency(512, 128, False) < rates.efficiency(2048, 128, False) < rates.efficiency(16384, 128, False)
    heads = [rates.efficiency(16384, d, False) for d in (64, 128, 256)]
    assert heads == sorted(heads) and len(set(heads)) == 3
    short = rates.efficiency(512, 128, True) / rates.efficiency(512, 128, False)
    long = rates.efficiency(16384, 128, True) / rates.efficiency(16384, 128, False)
    assert short < long <= 1.0
    assert rates.efficiency(1e9, 1e9, False) <= 1.0


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 65536), n=st.integers(1, 65536), k=st.integers(1, 65536), count=st.integers(1, 64),
    fmt=st.sampled_from(["bf16", "fp8", "mxfp8", "nvfp4"]), device=st.sampled_from([H100, B200, GB200, A100]),
)
def test_gemm_time_respects_both_rooflines(m, n, k, count, fmt, device) -> None:
    rates = gemm_rates(device, fmt)
    time_s = rates.time_s(m, n, k, count)
    assert time_s >= 2.0 * m * n * k * count / rates.peak * (1 - 1e-9)
    moved = ((m * k + k * n) * rates.operand_bytes + m * n * rates.output_bytes) * count
    assert time_s >= moved / device.hbm_bandwidth_Bps * (1 - 1e-9)
    assert 0.0 < rates.efficiency(m, n, k, count) <= 1.0


def test_unknown_fp8_recipe_is_refused_naming_the_field() -> None:
    import pytest

    from fabricsim.errors import FabricsimError
    from fabricsim.workload.training import FP8_RECIPES, TrainingOptions

    assert set(FP8_RECIPES) == set(kernels.RECIPE_FORMAT)
    with pytest.raises(FabricsimError, match="fp8_recipe"):
        TrainingOptions(fp8_recipe="fp7")


def test_quantisation_bytes_follow_the_recipe_and_the_gemm_layouts_of_the_generation() -> None:
    """Per-tensor FP8 writes a transposed copy for Hopper's TN-only FP8 GEMMs and none on Blackwell
    (TE nvte_is_non_tn_fp8_gemm_supported, kernel-efficiency.md S13); block-scaled recipes keep both
    orientations everywhere; 16-bit training quantises nothing."""
    from fabricsim.specs import Generation
    from fabricsim.transformer.kernels import quantize_bytes_per_element as qb

    hopper, blackwell = Generation.HOPPER, Generation.BLACKWELL
    assert qb("fp8", "current", hopper) == 6.0 and qb("fp8", "current", blackwell) == 5.0
    assert qb("fp8", None, hopper) == qb("fp8", "delayed", hopper) == 4.0
    assert qb("fp8", "delayed", blackwell) == 3.0
    assert qb("fp8", "mxfp8", hopper) == qb("fp8", "mxfp8", blackwell) == 4.1
    assert qb("fp4", None, blackwell) == 5.6 and qb("bf16", None, blackwell) == 0.0


@pytest.mark.parametrize(("batch", "kv_len", "measured"), [
    (64, 1024, 0.88), (16, 4096, 0.89), (1, 1024, 0.21), (64, 32, 0.41),  # A26 FlashInfer batch decode
    (1, 4096, 0.47), (1, 16384, 0.74), (1, 65536, 0.88),  # A24 single-request decode
])
def test_decode_attention_fixed_time_reproduces_flashinfer_h100(batch, kv_len, measured):
    """KV bytes at achieved HBM plus ATTENTION_KERNEL_FIXED_S gives FlashInfer's fraction of H100 HBM
    bandwidth (kernel-efficiency.md A24/A26; MHA 32 heads, d=128, fp16) within 10 points, and never a
    slower kernel than measured by more than that (calibrated low)."""
    kv_bytes = batch * kv_len * 32 * 128 * 2 * 2
    time_s = kv_bytes / hbm_achieved_Bps(H100) + kernels.ATTENTION_KERNEL_FIXED_S
    fraction = kv_bytes / time_s / H100.hbm_bandwidth_Bps
    assert fraction == pytest.approx(measured, abs=0.10)
    assert fraction > measured - 0.03
