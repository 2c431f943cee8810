"""A ``kernels`` block may carry only some figures (issue 25: e.g. public GEMM figures but no
attention or HBM benchmark); each missing figure runs on its generation default alone, and
``kernel_provenance`` names it as a default."""

from __future__ import annotations

import pytest

from fabricsim import catalog
from fabricsim.transformer import kernels


def _h100_without(*fields: str):
    h100 = catalog.load_device("h100-sxm")
    return h100, h100.model_copy(update={"kernels": h100.kernels.model_copy(update=dict.fromkeys(fields))})


def test_a_missing_attention_figure_runs_on_the_default_and_keeps_the_gemm_figures() -> None:
    h100, partial = _h100_without("attention")
    assert kernels.attention_rates(partial).forward_fraction == kernels.DEFAULT_ATTENTION_FRACTION[0]
    assert kernels.gemm_rates(partial, "bf16").fraction == kernels.gemm_rates(h100, "bf16").fraction
    figures = kernels.kernel_provenance(partial)
    assert "attention" in figures["defaults"] and "gemm bf16" in figures["measured"]


def test_a_missing_hbm_figure_runs_on_the_default_fraction() -> None:
    _, partial = _h100_without("hbm_achieved_Bps")
    expected = partial.hbm_bandwidth_Bps * kernels.DEFAULT_HBM_FRACTION
    assert kernels.hbm_achieved_Bps(partial) == pytest.approx(expected)
    assert kernels.gemm_rates(partial, "bf16").hbm_Bps == pytest.approx(expected)
    assert "hbm achieved" in kernels.kernel_provenance(partial)["defaults"]
