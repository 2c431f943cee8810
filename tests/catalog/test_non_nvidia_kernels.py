"""Kernel figures of the non-NVIDIA devices (issue 25): which are measured (cited kernel-level
figures in the package's kernel-efficiency reference) and which stay generation defaults, as
``catalog show`` reports them; every measured figure names its row; the compute model reproduces the
figure it was calibrated on."""

from __future__ import annotations

import re
from importlib import resources

import pytest

from fabricsim import api, catalog
from fabricsim.transformer.kernels import attention_rates, gemm_rates, hbm_achieved_Bps

# device -> (kernel figures measured, figures on the generation defaults)
PROVENANCE = {
    "mi300x": ({"gemm bf16", "gemm fp8", "hbm achieved"}, {"attention", "sustained clock"}),
    "mi325x": ({"gemm bf16"}, {"attention", "hbm achieved", "sustained clock"}),
    "mi355x": ({"gemm bf16", "gemm fp8", "attention"}, {"hbm achieved", "sustained clock"}),
    "gaudi3": ({"gemm bf16", "gemm fp8"}, {"attention", "hbm achieved", "sustained clock"}),
    # no public kernel-level figure at all (kernel-efficiency.md V6)
    "tpu-v5p": (set(), {"sm count", "gemm bf16", "gemm fp8", "attention", "hbm achieved", "sustained clock"}),
    "tpu-v6e": (set(), {"sm count", "gemm bf16", "attention", "hbm achieved", "sustained clock"}),
    "tpu7x": (set(), {"sm count", "gemm bf16", "attention", "hbm achieved", "sustained clock"}),
    "trainium2": (set(), {"sm count", "gemm bf16", "gemm fp8", "attention", "hbm achieved", "sustained clock"}),
}
REFERENCE = resources.files("fabricsim.transformer").joinpath("data", "kernel-efficiency.md").read_text("utf-8")


@pytest.mark.parametrize("device", sorted(PROVENANCE))
def test_catalog_show_says_which_kernel_figures_are_measured_and_which_are_defaults(device: str) -> None:
    measured, defaults = PROVENANCE[device]
    figures = api.catalog_show("devices", device)["kernel_figures"]
    assert measured <= set(figures["measured"]) and not measured & set(figures["defaults"])
    assert defaults <= set(figures["defaults"]) and not defaults & set(figures["measured"])
    if defaults:
        assert f"defaults (generation {figures['generation']})" in figures["summary"]


@pytest.mark.parametrize("device", ["mi300x", "mi325x", "mi355x", "gaudi3"])
def test_every_kernel_figure_cites_a_row_of_the_reference(device: str) -> None:
    sources = {k: v for k, v in catalog.load_device(device).sources.items() if k.startswith("kernels.")}
    assert {"kernels.sm_count", "kernels.tensor_clock_hz", "kernels.gemm.bf16"} <= set(sources)
    for key, source in sources.items():
        rows = re.findall(r"kernel-efficiency\.md (V\d+)", source)
        assert rows, (key, source)
        for row in rows:
            assert f"| {row} |" in REFERENCE, (key, row)
        assert "mlperf" not in source.lower()  # kernel-level figures only, never an end-to-end result


def test_the_datasheet_peak_is_the_cited_clock_times_the_matrix_units() -> None:
    """tensor_clock_hz is the clock of the datasheet peak (V3): MI300X 2100 MHz x 1216 matrix cores x
    256 FMA x 2, MI355X 2400 MHz x 1024 x 512 x 2, Gaudi 3 1750 MHz x 8 MMEs x 256^2 x 2."""
    for device, units, flop_per_clock in (("mi300x", 1216, 512), ("mi355x", 1024, 1024), ("gaudi3", 8, 2 * 256**2)):
        spec = catalog.load_device(device)
        assert spec.kernels.tensor_clock_hz * units * flop_per_clock == pytest.approx(spec.peak("bf16"), rel=0.01)


@pytest.mark.parametrize("device", ["mi300x", "mi325x", "mi355x", "gaudi3"])
def test_the_burst_gemm_model_reproduces_the_figures_it_was_calibrated_on(device: str) -> None:
    """At its own shape a figure comes back at most 10 % low, never high: the model adds the fixed
    kernel time and any partial last wave on top of the inverted fraction (the catalog's NVIDIA
    figures come back at 0.91-0.97 the same way)."""
    spec = catalog.load_device(device)
    for fmt, bench in spec.kernels.gemm.items():
        rates = gemm_rates(spec, fmt)
        flops = 2.0 * bench.m * bench.n * bench.k
        predicted = flops / rates.time_s(bench.m, bench.n, bench.k)
        assert 0.90 * bench.flops_per_s <= predicted <= bench.flops_per_s, (device, fmt)


def test_the_mi355x_attention_figures_are_reproduced_and_mi300x_keeps_the_default() -> None:
    mi355x = catalog.load_device("mi355x")
    bench, rates = mi355x.kernels.attention, attention_rates(mi355x)
    forward = rates.peak * rates.efficiency(bench.seq_len, bench.head_dim, bench.causal)
    backward = rates.peak * rates.efficiency(bench.seq_len, bench.head_dim, bench.causal, backward=True)
    assert forward == pytest.approx(1173.2e12) and backward == pytest.approx(1034.1e12)
    assert rates.kernel == "aiter-fa"
    assert attention_rates(catalog.load_device("mi300x")).kernel == "default"


def test_measured_hbm_replaces_the_default_fraction_only_where_published() -> None:
    mi300x, mi325x = catalog.load_device("mi300x"), catalog.load_device("mi325x")
    assert hbm_achieved_Bps(mi300x) == pytest.approx(4.09e12)  # V4 triad, 77 % of 5.3 TB/s
    assert hbm_achieved_Bps(mi325x) < mi325x.hbm_bandwidth_Bps  # the default fraction of its 6 TB/s
