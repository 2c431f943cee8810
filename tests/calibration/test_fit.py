"""The alpha-beta envelope fit: recovers known lines; errors are relative."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.calibration.fit import fit_lines, predict_s
from fabricsim.errors import FabricsimError

SIZES = [2**k for k in range(3, 34)]


def test_one_line_is_recovered_exactly():
    times = [20e-6 + s / 100e9 for s in SIZES]
    fit = fit_lines(SIZES, times)
    assert len(fit.lines) == 1
    assert fit.lines[0].latency_s == pytest.approx(20e-6, rel=1e-6)
    assert fit.lines[0].bandwidth_Bps == pytest.approx(100e9, rel=1e-6)
    assert max(abs(e) for e in fit.relative_errors) < 1e-9


def test_two_regimes_are_recovered_as_the_fastest_of_two_lines():
    small, large = (10e-6, 10e9), (500e-6, 200e9)
    times = [min(a + s / b for a, b in (small, large)) for s in SIZES]
    fit = fit_lines(SIZES, times)
    assert len(fit.lines) == 2
    got = sorted((line.latency_s, line.bandwidth_Bps) for line in fit.lines)
    assert got[0] == pytest.approx(small, rel=1e-3) and got[1] == pytest.approx(large, rel=1e-3)
    assert all(predict_s(fit.lines, s) == pytest.approx(t, rel=1e-3) for s, t in zip(SIZES, times, strict=True))


@settings(max_examples=15)  # each example searches every split into up to 4 regimes
@given(st.floats(1e-6, 1e-3), st.floats(1e9, 1e12), st.integers(0, 2**31))
def test_noisy_single_line_stays_within_noise(latency_s, bandwidth_Bps, seed):
    sizes = SIZES[::2]
    noise = np.random.default_rng(seed).uniform(-0.02, 0.02, len(sizes))
    times = [(latency_s + s / bandwidth_Bps) * (1 + n) for s, n in zip(sizes, noise, strict=True)]
    fit = fit_lines(sizes, times)
    assert all(line.latency_s >= 0 and line.bandwidth_Bps > 0 for line in fit.lines)
    assert max(abs(e) for e in fit.relative_errors) < 0.05


def test_too_few_rows():
    with pytest.raises(FabricsimError, match="at least"):
        fit_lines([8], [1e-5])
