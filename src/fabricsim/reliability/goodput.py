"""Goodput of a training run: failures, checkpoints and restarts combined (layer L8).

Puts the pieces together: cluster failure rates (:mod:`.failures`), the checkpoint and restart
costs (:mod:`.checkpoint`), the checkpoint interval (Daly's optimum by default, :mod:`.interval`),
and the seeded Monte-Carlo of ``days`` of wall time (:mod:`.montecarlo`), next to the closed-form
expectation. Goodput = the step model's tokens/s × ETTR.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.reliability.checkpoint import CheckpointCost, RestartCost
from fabricsim.reliability.failures import DAY_S, FailureRates
from fabricsim.reliability.interval import daly_interval_s, expected_ettr
from fabricsim.reliability.montecarlo import RunModel, RunSamples, simulate_runs


@dataclass(frozen=True, slots=True)
class Training:
    """The step model's figures for the layout: seconds per step, tokens/s, GPUs."""

    step_time_s: float
    tokens_per_s: float
    gpus: int


@dataclass(frozen=True, slots=True)
class Degradation:
    """A rerouted cable failure: training runs at ``throughput_fraction`` for ``repair_s``."""

    repair_s: float
    throughput_fraction: float

    @property
    def loss_s(self) -> float:
        return self.repair_s * (1.0 - self.throughput_fraction)


@dataclass(frozen=True, slots=True)
class Scenario:
    """Everything one goodput estimate needs. ``interval_s`` None means Daly's optimum."""

    rates: FailureRates
    checkpoint: CheckpointCost
    restart: RestartCost
    degradation: Degradation
    interval_s: float | None


@dataclass(frozen=True, slots=True)
class RunPlan:
    days: float
    runs: int
    seed: int


@dataclass(frozen=True, slots=True)
class GoodputEstimate:
    interval_s: float
    restart_s: float
    expected_ettr: float
    samples: RunSamples


def choose_interval_s(scenario: Scenario, step_time_s: float, days: float) -> float:
    """Seconds of work between checkpoints: the given one or Daly's optimum for the blocking cost,
    at least the overlapped persist (a snapshot cannot start before the previous one is durable),
    rounded up to whole steps (checkpoints happen between steps)."""
    if scenario.interval_s is not None:
        tau = scenario.interval_s
    elif scenario.rates.total_per_s == 0:
        tau = days * DAY_S
    else:
        tau = daly_interval_s(max(scenario.checkpoint.blocking_s, 1e-9), scenario.rates.mttf_s)
    tau = max(tau, scenario.checkpoint.overlapped_s, step_time_s)
    return math.ceil(tau / step_time_s - 1e-9) * step_time_s


def estimate(scenario: Scenario, training: Training, plan: RunPlan) -> GoodputEstimate:
    """Interval, restart time, expected ETTR (closed form) and the Monte-Carlo samples."""
    scenario.restart.validate()
    if not (math.isfinite(training.step_time_s) and training.step_time_s > 0):
        raise FabricsimError("step_time", f"the step model gave {training.step_time_s!r} s", "check the layout")
    tau = choose_interval_s(scenario, training.step_time_s, plan.days)
    restart_s = scenario.restart.total_s(scenario.checkpoint.load_s)
    model = RunModel(
        stop_rate_per_s=scenario.rates.stop_rate_per_s,
        degrade_rate_per_s=scenario.rates.degrade_rate_per_s,
        degrade_loss_s=scenario.degradation.loss_s,
        interval_s=tau,
        blocking_s=scenario.checkpoint.blocking_s,
        durable_s=scenario.checkpoint.overlapped_s,
        restart_s=restart_s,
        days=plan.days,
    )
    return GoodputEstimate(tau, restart_s, _expected(model, scenario.rates), simulate_runs(model, plan.runs, plan.seed))


def expected_ettr_of(scenario: Scenario, interval_s: float) -> float:
    """Closed-form ETTR of ``scenario`` checkpointing every ``interval_s`` of work (no sampling)."""
    scenario.restart.validate()
    restart_s = scenario.restart.total_s(scenario.checkpoint.load_s)
    model = RunModel(
        stop_rate_per_s=scenario.rates.stop_rate_per_s,
        degrade_rate_per_s=scenario.rates.degrade_rate_per_s,
        degrade_loss_s=scenario.degradation.loss_s,
        interval_s=interval_s,
        blocking_s=scenario.checkpoint.blocking_s,
        durable_s=scenario.checkpoint.overlapped_s,
        restart_s=restart_s,
        days=1.0,
    )
    return _expected(model, scenario.rates)


def _expected(model: RunModel, rates: FailureRates) -> float:
    """Closed-form ETTR: Daly's model with the persist delay added to the restart, times the share
    of time not lost to rerouted cable failures."""
    degraded = 1.0 - min(1.0, model.degrade_rate_per_s * model.degrade_loss_s)
    if rates.total_per_s == 0:
        return degraded * model.interval_s / (model.interval_s + model.blocking_s)
    kept = expected_ettr(model.interval_s, model.blocking_s, model.restart_s + model.durable_s, rates.mttf_s)
    return kept * degraded


def summary(values: np.ndarray) -> dict[str, float]:
    """Mean, 10th and 90th percentile of per-run values."""
    return {
        "mean": float(np.mean(values)),
        "p10": float(np.percentile(values, 10)),
        "p90": float(np.percentile(values, 90)),
    }
