"""The kernel model on AMD Instinct against kernel measurements it was NOT calibrated on (issue 25).

Data: ``HazyResearch/HipKittens`` @ ``f09e9685c4c6aaa41fb3ebd4fe4ca664938589e1`` (kernel-efficiency.md
V5): square BF16 GEMMs through PyTorch (hipBLASLt) on MI325X and MI355X
(``analysis/bf16_gemm/mi325x/mi325x_bf16_gemm.json``, ``analysis/bf16_gemm/mi350x/mi355x_bf16_gemm.json``,
``tflops_pytorch``), hipBLASLt FP8 on MI355X (``analysis/fp8_gemm/mi350x/mi355x_fp8_gemm.json``) and AITER
attention on MI355X (``analysis/attn/{fwd,bkwd}/benchmark/mi355x_mha_*.json``, ``tflops_ref``, MHA b=16
h=16 d=128). The catalog's BF16 figures are the MAMF sweep bests (V1), its MI355X FP8 and attention
figures the 8192 points of these files, which are left out here.

Large problems agree (below). Known misses, not asserted: N <= 2048 GEMMs and seqlen <= 2048
attention are predicted 12-280 % too fast (the fixed per-kernel time and the small-problem
constants were fitted on NVIDIA kernels), and N = 4096 BF16 GEMMs miss by -15 % (MI325X) / +27 %
(MI355X)."""

from __future__ import annotations

import pytest

from fabricsim import catalog
from fabricsim.transformer.kernels import attention_rates, gemm_rates

# (device, format, N, measured TFLOP/s) of N x N x N GEMMs
GEMMS = [
    ("mi325x", "bf16", 8192, 785.3),
    ("mi325x", "bf16", 16384, 749.8),
    ("mi355x", "bf16", 8192, 1521.3),
    ("mi355x", "bf16", 16384, 1559.8),
    ("mi355x", "fp8", 4096, 2748.8),
    ("mi355x", "fp8", 16384, 3293.2),
]
# (seqlen, causal, backward, measured TFLOP/s) of AITER attention on MI355X, d = 128
ATTENTION = [
    (4096, True, False, 1069.0),
    (16384, True, False, 1247.4),
    (4096, True, True, 876.8),
    (16384, True, True, 1108.7),
    (4096, False, False, 1210.7),
    (8192, False, False, 1259.3),
    (16384, False, False, 1282.6),
    (4096, False, True, 1056.0),
    (8192, False, True, 1166.8),
    (16384, False, True, 1201.2),
]


@pytest.mark.parametrize(("device", "fmt", "n", "measured"), GEMMS)
def test_large_gemms_within_10_percent(device: str, fmt: str, n: int, measured: float) -> None:
    rates = gemm_rates(catalog.load_device(device), fmt)
    predicted = 2.0 * n**3 / rates.time_s(n, n, n) / 1e12
    assert predicted == pytest.approx(measured, rel=0.10)


@pytest.mark.parametrize(("seq", "causal", "backward", "measured"), ATTENTION)
def test_long_sequence_attention_within_15_percent(seq: int, causal: bool, backward: bool, measured: float) -> None:
    rates = attention_rates(catalog.load_device("mi355x"))
    predicted = rates.peak * rates.efficiency(seq, 128, causal, backward=backward) / 1e12
    assert predicted == pytest.approx(measured, rel=0.15)
