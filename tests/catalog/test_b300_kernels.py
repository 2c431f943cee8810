"""B300's kernel figures (issue 25 follow-up): the ml-engineering MAMF rows (kernel-efficiency.md V8)
replace the Blackwell generation defaults for its GEMMs; what is not published stays a default and
``catalog show`` says so."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from fabricsim import api, catalog
from fabricsim.transformer.kernels import DEFAULT_GEMM_FRACTION, gemm_rates

REFERENCE = resources.files("fabricsim.transformer").joinpath("data", "kernel-efficiency.md").read_text("utf-8")


def test_b300_gemm_figures_are_the_mamf_rows() -> None:
    kernels = catalog.load_device("b300").kernels
    assert kernels is not None and kernels.sm_count == 148  # the shipping SKU, not the 160-SM full die
    bf16, fp8 = kernels.gemm["bf16"], kernels.gemm["fp8"]
    assert (bf16.flops_per_s, bf16.m, bf16.n, bf16.k) == (1769.0e12, 12288, 18432, 1024)
    assert (fp8.flops_per_s, fp8.m, fp8.n, fp8.k) == (3353.3e12, 3072, 6144, 7168)
    row = next(line for line in REFERENCE.splitlines() if line.startswith("| V8 |"))
    assert "1769.0" in row and "3353.3" in row and "744d01e" in row and "148 and 152 SMs" in row


def test_every_b300_kernel_figure_cites_the_v8_row() -> None:
    sources = {k: v for k, v in catalog.load_device("b300").sources.items() if k.startswith("kernels.")}
    assert {"kernels.sm_count", "kernels.tensor_clock_hz", "kernels.gemm.bf16", "kernels.gemm.fp8"} <= set(sources)
    for key, source in sources.items():
        assert re.findall(r"kernel-efficiency\.md (V\d+)", source) == ["V8"], key
        assert "mlperf" not in source.lower()


def test_catalog_show_says_which_b300_figures_are_measured() -> None:
    figures = api.catalog_show("devices", "b300")["kernel_figures"]
    assert {"sm count", "gemm bf16", "gemm fp8"} <= set(figures["measured"])
    assert {"attention", "hbm achieved", "sustained clock"} <= set(figures["defaults"])
    assert "gemm bf16" not in figures["defaults"]


def test_the_tensor_clock_is_the_datasheet_peak_over_the_tensor_cores() -> None:
    spec = catalog.load_device("b300")
    assert spec.kernels.tensor_clock_hz * 148 * 4 * 2048 == pytest.approx(spec.peak("bf16"), rel=0.01)


@pytest.mark.parametrize("fmt", ["bf16", "fp8"])
def test_the_burst_gemm_model_reproduces_the_b300_figures(fmt: str) -> None:
    """At its own shape a figure comes back at most 10 % low, never high (as for the other devices)."""
    spec = catalog.load_device("b300")
    bench = spec.kernels.gemm[fmt]
    rates = gemm_rates(spec, fmt)
    predicted = 2.0 * bench.m * bench.n * bench.k / rates.time_s(bench.m, bench.n, bench.k)
    assert 0.90 * bench.flops_per_s <= predicted <= bench.flops_per_s
    assert rates.fraction != pytest.approx(DEFAULT_GEMM_FRACTION)  # no longer the generation default
