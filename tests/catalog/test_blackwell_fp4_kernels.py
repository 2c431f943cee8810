"""Issue 27: the Blackwell FP4 kernel figures (B200 cuBLASLt NVFP4, GB200 from it, a GB300 kernel block from
Blackwell Ultra measurements) are the kernel-level figures of kernel-efficiency.md W1-W3, with their sources."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabricsim import catalog
from fabricsim.transformer import kernels as kernel_model
from fabricsim.transformer.kernels import gemm_rates, kernel_provenance

KERNEL_EFFICIENCY = (Path(kernel_model.__file__).parent / "data" / "kernel-efficiency.md").read_text(encoding="utf-8")


def _w_row(row_id: str) -> str:
    line = next((line for line in KERNEL_EFFICIENCY.splitlines() if line.startswith(f"| {row_id} |")), None)
    assert line is not None, row_id
    return line


def test_b200_nvfp4_is_the_cublaslt_kernel_timing() -> None:
    """6143 TFLOP/s = 2 x 8192^3 FLOP / 178.976 us (Nsight Systems kernel time in W1)."""
    bench = catalog.load_device("b200").kernels.gemm["nvfp4"]
    assert (bench.m, bench.n, bench.k) == (8192, 8192, 8192)
    assert bench.flops_per_s == pytest.approx(2 * 8192**3 / 178.976e-6, rel=1e-3)
    assert "178.976 µs" in _w_row("W1")


def test_gb200_takes_the_b200_figure_unscaled_and_says_so() -> None:
    b200, gb200 = catalog.load_device("b200"), catalog.load_device("gb200")
    assert gb200.kernels.gemm["nvfp4"] == b200.kernels.gemm["nvfp4"]
    assert "assumed" in gb200.sources["kernels.gemm.nvfp4"]


def test_gb300_has_a_kernel_block_from_blackwell_ultra_measurements() -> None:
    gb300 = catalog.load_device("gb300")
    gemm = gb300.kernels.gemm
    assert (gemm["bf16"].flops_per_s, gemm["bf16"].k) == (1769.0e12, 1024)  # W2, MAMF B300 BF16
    assert (gemm["fp8"].flops_per_s, gemm["fp8"].k) == (3353.3e12, 7168)  # W2, MAMF B300 FP8
    assert gemm["mxfp8"].flops_per_s == pytest.approx(3353.3e12 * 6.812 / 7.161, rel=1e-4)  # S12
    assert (gemm["nvfp4"].flops_per_s, gemm["nvfp4"].m, gemm["nvfp4"].k) == (8342.0e12, 8192, 33024)  # W3
    assert "8.342 PFLOP/s" in _w_row("W3")
    figures = kernel_provenance(gb300)
    assert "gemm nvfp4" in figures["measured"] and "gemm bf16" in figures["measured"]
    assert {"attention", "sustained clock"} <= set(figures["defaults"])  # none published: stated in the YAML


def test_every_w_row_the_catalog_cites_exists() -> None:
    for name in ("b200", "gb200", "gb300"):
        for key, source in catalog.load_device(name).sources.items():
            for row_id in re.findall(r"kernel-efficiency\.md (W\d+)", source):
                assert _w_row(row_id), (name, key)


def test_gb300_nvfp4_gemms_run_between_gb200_and_the_old_generation_default() -> None:
    """A Llama 3.1 405B FFN GEMM (8192 tokens x 53248 x 16384) at the sustained clock: GB300 is faster than
    GB200, as its 1.5x FP4 peak allows, but well below the 0.80-of-peak generation default it ran on before."""
    shape = (8192, 53248, 16384)

    def rate(name: str) -> float:
        rates = gemm_rates(catalog.load_device(name), "nvfp4", sustained=True)
        return rates.peak * rates.efficiency(*shape)

    gb300_peak = catalog.load_device("gb300").peak("fp4")
    default = gb300_peak * kernel_model.DEFAULT_GEMM_FRACTION * kernel_model.DEFAULT_SUSTAINED_FRACTION
    assert rate("gb200") < rate("gb300") < 0.75 * default
