"""The seeded Monte-Carlo of a run against Daly's closed form, and its determinism."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.reliability.failures import DAY_S
from fabricsim.reliability.interval import expected_ettr
from fabricsim.reliability.montecarlo import RunModel, simulate_runs

HOUR = 3600.0


def _model(mttf_s: float, **changes) -> RunModel:
    base = {
        "stop_rate_per_s": np.array([0.6, 0.3, 0.1]) / mttf_s,
        "degrade_rate_per_s": 0.0,
        "degrade_loss_s": 0.0,
        "interval_s": 900.0,
        "blocking_s": 30.0,
        "durable_s": 0.0,
        "restart_s": 600.0,
        "days": 54.0,
    }
    return RunModel(**{**base, **changes})


@pytest.mark.parametrize(
    ("mttf_s", "changes"),
    [
        (3 * HOUR, {}),
        (1 * HOUR, {"interval_s": 300.0, "blocking_s": 5.0}),
        (12 * HOUR, {"interval_s": 3600.0, "blocking_s": 120.0, "restart_s": 1800.0}),
        (2 * HOUR, {"durable_s": 200.0}),  # asynchronous: kept only once persisted
    ],
)
def test_monte_carlo_agrees_with_the_closed_form_within_2_percent(mttf_s, changes):
    model = _model(mttf_s, **changes)
    samples = simulate_runs(model, 1000, seed=7)
    analytic = expected_ettr(model.interval_s, model.blocking_s, model.restart_s + model.durable_s, mttf_s)
    assert samples.ettr.mean() == pytest.approx(analytic, rel=0.02)
    assert samples.interruptions.mean() == pytest.approx(model.days * DAY_S / mttf_s, rel=0.02)


def test_causes_are_drawn_in_proportion_to_their_rates():
    model = _model(3 * HOUR)
    samples = simulate_runs(model, 1000, seed=1)
    expected = model.stop_rate_per_s * model.days * DAY_S
    assert samples.by_cause.mean(axis=0) == pytest.approx(expected, rel=0.03)
    assert (samples.by_cause.sum(axis=1) == samples.interruptions).all()


def test_rerouted_failures_cost_their_loss():
    healthy = simulate_runs(_model(3 * HOUR), 1000, seed=3)
    degraded = simulate_runs(_model(3 * HOUR, degrade_rate_per_s=1 / (24 * HOUR), degrade_loss_s=3600.0), 1000, seed=3)
    assert degraded.degradations.mean() == pytest.approx(54.0, rel=0.05)
    assert degraded.ettr.mean() == pytest.approx(healthy.ettr.mean() * (1 - 1 / 24), rel=0.01)


def test_same_seed_same_runs_other_seed_other_runs():
    model = _model(2 * HOUR)
    first, second = simulate_runs(model, 200, seed=5), simulate_runs(model, 200, seed=5)
    assert np.array_equal(first.ettr, second.ettr) and np.array_equal(first.by_cause, second.by_cause)
    assert not np.array_equal(first.ettr, simulate_runs(model, 200, seed=6).ettr)


def test_no_failures_keeps_every_segment():
    model = _model(3 * HOUR, stop_rate_per_s=np.zeros(2), days=1.0, restart_s=0.0)
    samples = simulate_runs(model, 10, seed=0)
    segments = np.floor(DAY_S / (model.interval_s + model.blocking_s))
    assert samples.ettr == pytest.approx(segments * model.interval_s / DAY_S)
    assert (samples.interruptions == 0).all()


def test_many_runs_are_processed_in_chunks():
    """Enough failures to split the runs into several chunks; the summary still matches."""
    model = _model(600.0, days=200.0, interval_s=120.0, blocking_s=2.0, restart_s=60.0)
    samples = simulate_runs(model, 100, seed=2)
    assert samples.ettr.size == 100
    assert samples.ettr.mean() == pytest.approx(expected_ettr(120.0, 2.0, 60.0, 600.0), rel=0.01)


@pytest.mark.parametrize(("runs", "days"), [(0, 1.0), (True, 1.0), (10, 0.0), (10, float("nan")), (10, 1e9)])
def test_bad_run_settings_are_user_errors(runs, days):
    with pytest.raises(FabricsimError):
        simulate_runs(_model(HOUR, days=days), runs, seed=0)
