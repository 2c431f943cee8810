"""``kernel_provenance``: which kernel figures of a device are catalog measurements, which are borrowed
from another measured format, and which fall back to the generation defaults (issue 25: ``catalog
show`` says which kernel figures are defaults)."""

from __future__ import annotations

from fabricsim import catalog
from fabricsim.transformer.kernels import (
    DEFAULT_SUSTAINED_FRACTION,
    PROVENANCE_GEMM_FORMATS,
    gemm_rates,
    kernel_provenance,
    sustained_fraction,
)


def test_a_device_without_kernels_runs_on_generation_defaults_and_says_so() -> None:
    tpu = catalog.load_device("tpu-v5p")  # no kernel-level TPU figure is published (kernel-efficiency.md V6)
    assert tpu.kernels is None
    figures = kernel_provenance(tpu)
    assert figures["measured"] == [] and figures["borrowed"] == {}
    assert {f"gemm {fmt}" for fmt in PROVENANCE_GEMM_FORMATS} <= set(figures["defaults"])
    assert {"attention", "hbm achieved", "sustained clock", "sm count"} <= set(figures["defaults"])
    assert str(figures["summary"]).startswith("defaults (generation tpu-v5): ")


def test_a_missing_sustained_clock_is_reported_as_the_default_it_runs_on() -> None:
    gb200 = catalog.load_device("gb200")
    figures = kernel_provenance(gb200)
    assert figures["defaults"] == ["sustained clock"]
    assert sustained_fraction(gb200) == DEFAULT_SUSTAINED_FRACTION  # what the report claims
    b200 = kernel_provenance(catalog.load_device("b200"))
    assert b200["defaults"] == [] and "sustained clock" in b200["measured"]


def test_formats_without_a_figure_name_the_figure_they_borrow() -> None:
    a100 = catalog.load_device("a100-80gb")
    figures = kernel_provenance(a100)
    assert figures["borrowed"]["gemm fp8"] == "gemm bf16" and "gemm bf16" in figures["measured"]
    # the borrowed fraction is the one the compute model uses: FP8 GEMMs at BF16's fraction
    assert gemm_rates(a100, "fp8").fraction == gemm_rates(a100, "bf16").fraction
    h100 = kernel_provenance(catalog.load_device("h100-sxm"))
    assert h100["borrowed"]["gemm nvfp4"] == "gemm fp8" and "gemm fp8_block" in h100["measured"]
