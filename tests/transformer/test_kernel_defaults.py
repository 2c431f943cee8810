"""The generation defaults of the kernel model are what their docstring says: the medians of the
catalog's kernel microbenchmark figures (a device without ``kernels`` data, or one held out by
``validate``'s leave-one-device-out, runs on them), and the guard on user figures holds."""

import statistics

import pytest

from fabricsim.specs import Generation
from fabricsim.transformer import kernels


def _devices():
    from fabricsim import catalog  # tests may read the catalog directly

    return [catalog.load_device(name) for name in catalog.names("devices")]


NVIDIA = (Generation.VOLTA, Generation.AMPERE, Generation.HOPPER, Generation.BLACKWELL)


def test_defaults_are_the_catalog_medians() -> None:
    """Medians over the NVIDIA devices' figures (the defaults' docstring: non-NVIDIA figures not folded in)."""
    # B300's MAMF figures (issue 25, kernel-efficiency.md V8) are not folded in, as the AMD and Intel
    # ones are not: the defaults stay the ones the NVIDIA suites were validated with
    devices = [d for d in _devices() if d.kernels is not None and d.generation in NVIDIA and d.name != "b300"]
    assert len(devices) >= 5
    bf16 = [d.kernels.gemm["bf16"] for d in devices]
    gemm_fraction = statistics.median(b.flops_per_s / d.peak("bf16") for b, d in zip(bf16, devices, strict=True))
    gemm_k = statistics.median(b.k for d in devices for b in d.kernels.gemm.values())
    attention = [kernels.attention_rates(d) for d in devices]
    hbm = statistics.median(d.kernels.hbm_achieved_Bps / d.hbm_bandwidth_Bps for d in devices)
    assert pytest.approx(gemm_fraction, rel=0.05) == kernels.DEFAULT_GEMM_FRACTION
    assert pytest.approx(gemm_k, rel=0.05) == kernels.DEFAULT_GEMM_K
    assert kernels.DEFAULT_ATTENTION_FRACTION[0] == pytest.approx(
        statistics.median(a.forward_fraction for a in attention), rel=0.05)
    assert kernels.DEFAULT_ATTENTION_FRACTION[1] == pytest.approx(
        statistics.median(a.backward_fraction for a in attention), rel=0.05)
    assert pytest.approx(hbm, rel=0.05) == kernels.DEFAULT_HBM_FRACTION
    measured = [kernels.sustained_fraction(d) for d in devices if d.kernels.sustained_clock_hz is not None]
    assert len(measured) >= 2
    assert pytest.approx(statistics.median(measured), rel=0.01) == kernels.DEFAULT_SUSTAINED_FRACTION


def test_sustained_rates_run_at_the_sustained_clock_and_in_step_figures_are_not_scaled_twice() -> None:
    """Compute-bound rates of a sustained run are the burst rates x sustained/datasheet clock; an
    attention figure timed inside a training step is already sustained (burst = it / the fraction);
    HBM-bound time does not change (memory has its own clock)."""
    devices = {d.name: d for d in _devices()}
    a100, h100 = devices["a100-80gb"], devices["h100-sxm"]
    assert kernels.sustained_fraction(a100) == pytest.approx(1305 / 1410)
    assert kernels.sustained_fraction(h100) == pytest.approx(1600 / 1830)
    for device in (a100, h100):
        clock = kernels.sustained_fraction(device)
        burst, sustained = kernels.gemm_rates(device, "bf16"), kernels.gemm_rates(device, "bf16", sustained=True)
        assert sustained.efficiency(8192, 8192, 8192) == pytest.approx(clock * burst.efficiency(8192, 8192, 8192))
        assert sustained.hbm_Bps == burst.hbm_Bps
    a100_bench, h100_bench = a100.kernels.attention, h100.kernels.attention
    assert not a100_bench.in_step and h100_bench.in_step
    clock = kernels.sustained_fraction(h100)
    assert kernels.attention_rates(h100, sustained=True).forward_fraction == pytest.approx(
        clock * kernels.attention_rates(h100).forward_fraction)
    in_step = kernels.attention_rates(h100, sustained=True)
    shape = kernels.attention_seq_factor(h100_bench.seq_len, True) * kernels.attention_head_factor(128)
    assert in_step.forward_fraction * in_step.peak * shape == pytest.approx(h100_bench.forward_flops_per_s)


def test_a_device_without_kernel_data_runs_on_the_defaults() -> None:
    h100 = next(d for d in _devices() if d.name == "h100-sxm")
    bare = h100.model_copy(update={"kernels": None})
    rates = kernels.gemm_rates(bare, "bf16")
    large = rates.efficiency(16384, 16384, kernels.DEFAULT_GEMM_K)  # whole waves: only padding-free tiles
    assert large == pytest.approx(kernels.DEFAULT_GEMM_FRACTION, rel=0.05)
    assert kernels.attention_rates(bare).forward_fraction == kernels.DEFAULT_ATTENTION_FRACTION[0]


def test_no_gemm_runs_above_the_guard_even_with_a_user_figure_at_peak() -> None:
    """A user's benchmark claiming 99% of peak is clamped to MAX_GEMM_FRACTION (CUTLASS 3.8's best
    Blackwell cases are 88-98%): no large GEMM is predicted above it."""
    h100 = next(d for d in _devices() if d.name == "h100-sxm")
    bench = h100.kernels.gemm["bf16"]

    def rates_claiming(fraction: float) -> kernels.GemmRates:
        claimed = bench.model_copy(update={"flops_per_s": fraction * h100.peak("bf16")})
        device = h100.model_copy(update={"kernels": h100.kernels.model_copy(update={"gemm": {"bf16": claimed}})})
        return kernels.gemm_rates(device, "bf16")

    assert rates_claiming(0.99) == rates_claiming(kernels.MAX_GEMM_FRACTION)
    assert rates_claiming(0.99).efficiency(16384, 16384, 16384) <= kernels.MAX_GEMM_FRACTION


def test_h200_kernels_are_h100_compute_with_faster_memory() -> None:
    """H200 is the H100's GH100 die (same SMs, clocks and tensor peaks) with HBM3e at 4.8 TB/s: its
    kernel figures must give the H100's GEMM and attention fractions and the same achieved share of
    a larger HBM bandwidth. (No validation row runs on H200, so this is what guards its block.)"""
    devices = {d.name: d for d in _devices()}
    h100, h200 = devices["h100-sxm"], devices["h200"]
    assert h200.kernels.sm_count == h100.kernels.sm_count
    assert h200.kernels.tensor_clock_hz == pytest.approx(h100.kernels.tensor_clock_hz, rel=0.01)
    for fmt in ("bf16", "fp8"):
        rates = [kernels.gemm_rates(d, fmt) for d in (h100, h200)]
        assert rates[1].efficiency(8192, 8192, 8192) == pytest.approx(rates[0].efficiency(8192, 8192, 8192), rel=0.05)
    attention = [kernels.attention_rates(d) for d in (h100, h200)]
    assert attention[1].forward_fraction == pytest.approx(attention[0].forward_fraction, rel=0.05)
    assert attention[1].backward_fraction == pytest.approx(attention[0].backward_fraction, rel=0.05)
    share = [d.kernels.hbm_achieved_Bps / d.hbm_bandwidth_Bps for d in (h100, h200)]
    assert share[1] == pytest.approx(share[0], rel=0.05)


@pytest.mark.parametrize(
    ("causal", "measured", "half"),
    [
        (False, (0.47, 0.63, 0.66), kernels.ATTENTION_SEQ_HALF),
        (True, (0.30, 0.53, 0.62), kernels.ATTENTION_CAUSAL_SEQ_HALF),
    ],
)
def test_attention_sequence_halves_are_the_least_squares_fit_of_fa3(causal, measured, half) -> None:
    """FA3 forward on H100, d=128, at 512 / 2k / 16k tokens (kernel-efficiency.md A7): the
    half-efficiency length is the least-squares fit of F x s / (s + S0), within 5%."""
    seqs = (512.0, 2048.0, 16384.0)

    def error(s0: float) -> float:
        x = [s / (s + s0) for s in seqs]
        f = sum(a * b for a, b in zip(x, measured, strict=True)) / sum(a * a for a in x)
        return sum((f * a - b) ** 2 for a, b in zip(x, measured, strict=True))

    best = min(range(20, 3000), key=error)
    assert half == pytest.approx(best, rel=0.05)
    assert kernels.attention_seq_factor(16384, causal) / kernels.attention_seq_factor(512, causal) == pytest.approx(
        measured[2] / measured[0], rel=0.1)
