"""Young's and Daly's checkpoint intervals and Daly's expected ETTR."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.reliability.interval import daly_interval_s, expected_ettr, young_interval_s

MINUTE = 60.0
HOUR = 3600.0


@pytest.mark.parametrize(
    ("mttf_s", "published_min"),
    [(24 * HOUR, 117.0), (6 * HOUR, 57.0), (15 * MINUTE, 9.1)],
)
def test_daly_matches_the_published_examples(mttf_s, published_min):
    """Daly (FGCS 2006): checkpoint 5 min; MTBF 24 h, 6 h, 15 min -> 117, 57, 9.1 min."""
    tau_min = daly_interval_s(5 * MINUTE, mttf_s) / MINUTE
    assert tau_min == pytest.approx(published_min, rel=0.01)


def test_young_is_the_square_root_rule():
    assert young_interval_s(5 * MINUTE, 24 * HOUR) == pytest.approx(120 * MINUTE)  # sqrt(2*300*86400) = 7200
    assert young_interval_s(2.0, 8.0) == pytest.approx(math.sqrt(32.0))


def test_daly_is_mttf_when_the_checkpoint_is_too_expensive():
    assert daly_interval_s(3 * HOUR, HOUR) == HOUR


@given(st.floats(1.0, 3600.0), st.floats(600.0, 1e7))
def test_daly_is_a_small_correction_of_young(checkpoint_s, mttf_s):
    """Daly's higher-order terms shift Young's interval by less than C (for C < M/2, a weak bound)."""
    if checkpoint_s >= mttf_s / 2:
        return
    assert abs(daly_interval_s(checkpoint_s, mttf_s) - young_interval_s(checkpoint_s, mttf_s)) <= checkpoint_s


@pytest.mark.parametrize(("checkpoint_s", "mttf_s"), [(300.0, 24 * HOUR), (60.0, 3 * HOUR), (5.0, 600.0)])
def test_daly_interval_is_near_the_optimum_of_the_exact_model(checkpoint_s, mttf_s):
    """Daly's interval is within 0.5% ETTR of the numerical optimum of his exact expression."""
    restart_s = 600.0
    daly = expected_ettr(daly_interval_s(checkpoint_s, mttf_s), checkpoint_s, restart_s, mttf_s)
    grid = [mttf_s * 10 ** (k / 200 - 4) for k in range(1000)]
    best = max(expected_ettr(t, checkpoint_s, restart_s, mttf_s) for t in grid)
    assert daly >= best * 0.995


def test_expected_ettr_limits():
    assert expected_ettr(100.0, 0.0, 0.0, 1e12) == pytest.approx(1.0, abs=1e-6)
    assert expected_ettr(100.0, 100.0, 0.0, 1e12) == pytest.approx(0.5, rel=1e-6)
    assert expected_ettr(1e6, 10.0, 10.0, 1.0) == 0.0  # overflow guard: no work survives


@given(st.floats(10.0, 1e5), st.floats(0.0, 1e4), st.floats(0.0, 1e4), st.floats(100.0, 1e7))
def test_expected_ettr_is_a_fraction_that_falls_with_the_failure_rate(interval_s, checkpoint_s, restart_s, mttf_s):
    value = expected_ettr(interval_s, checkpoint_s, restart_s, mttf_s)
    assert 0.0 <= value <= interval_s / (interval_s + checkpoint_s) + 1e-12
    assert expected_ettr(interval_s, checkpoint_s, restart_s, mttf_s / 2) <= value + 1e-12


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_inputs_are_user_errors(bad):
    with pytest.raises(FabricsimError):
        young_interval_s(bad, 100.0)
    with pytest.raises(FabricsimError):
        daly_interval_s(10.0, bad)
    with pytest.raises(FabricsimError):
        expected_ettr(bad, 1.0, 1.0, 100.0)
