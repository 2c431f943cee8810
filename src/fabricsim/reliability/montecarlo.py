"""Seeded, vectorised Monte-Carlo of a training run under failures (layer L8).

Model (the one :func:`fabricsim.reliability.interval.expected_ettr` solves in closed form):
job-stopping failures arrive as a Poisson process of rate Σλ over ``days`` of wall time. Every
stretch between two failures (and the first, the job launch) starts with a restart of
``restart_s``; then the job repeats segments of ``interval_s`` of work plus a blocking checkpoint
of ``blocking_s``. The work of a segment is kept when its checkpoint is durable, ``durable_s``
after the blocking part ends (0 for a synchronous write), before the next failure. The last stretch
ends at the end of the run, not at a failure, and keeps its completed segments.
Cable failures that the fabric routes around do not stop the job: each costs ``degrade_loss_s`` of
training time (repair time × the throughput lost meanwhile).

Vectorised over runs and failures: the failure count of a run is Poisson, the stretches between its
failures are D·E_i/ΣE (normalised exponentials are the spacings of uniform order statistics), and
the causes are a multinomial draw. Runs are processed in chunks of a fixed size derived from the
inputs only, so a seed gives the same numbers on every machine. Cost O(runs · (λD + 1)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.reliability.failures import DAY_S

_CHUNK_DRAWS = 2_000_000  # exponential draws per chunk: bounds memory (~100 MB), not a model constant


@dataclass(frozen=True, slots=True)
class RunModel:
    """One scenario: rates (1/s) by cause, the checkpoint schedule and costs (s), the run length."""

    stop_rate_per_s: np.ndarray  # float64 [causes]
    degrade_rate_per_s: float
    degrade_loss_s: float
    interval_s: float
    blocking_s: float
    durable_s: float
    restart_s: float
    days: float


@dataclass(frozen=True, slots=True)
class RunSamples:
    """Per run: interruptions, interruptions by cause [runs, causes], degradations and ETTR."""

    interruptions: np.ndarray
    by_cause: np.ndarray
    degradations: np.ndarray
    ettr: np.ndarray


def check_runs(runs: int) -> None:
    """Raise unless ``runs`` is a usable number of Monte-Carlo runs."""
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= 1_000_000:
        raise FabricsimError("runs", f"must be an integer in [1, 1000000], got {runs!r}")


def _check(model: RunModel, runs: int) -> None:
    check_runs(runs)
    if not (np.isfinite(model.days) and 0 < model.days <= 100_000):
        raise FabricsimError("days", f"must be a number in (0, 100000], got {model.days!r}")
    if not model.interval_s > 0:
        raise FabricsimError("checkpoint-interval", f"must be > 0 s, got {model.interval_s!r}")


def _kept_work_s(spacing_s: np.ndarray, last: np.ndarray, model: RunModel) -> np.ndarray:
    """Work kept in each stretch: τ per segment whose checkpoint is durable before the stretch ends."""
    segment_s = model.interval_s + model.blocking_s
    durable = np.where(last, 0.0, model.durable_s)
    usable = np.maximum(spacing_s - model.restart_s - durable, 0.0)
    return model.interval_s * np.floor(usable / segment_s)


def _chunk(model: RunModel, runs: int, rng: np.random.Generator) -> RunSamples:
    duration_s = model.days * DAY_S
    total = float(model.stop_rate_per_s.sum())
    failures = rng.poisson(total * duration_s, size=runs)
    stretches = failures + 1
    starts = np.concatenate(([0], np.cumsum(stretches)[:-1]))
    draws = rng.standard_exponential(int(stretches.sum()))
    scale = duration_s / np.add.reduceat(draws, starts)
    spacing_s = draws * np.repeat(scale, stretches)
    last = np.zeros(draws.size, dtype=bool)
    last[starts + stretches - 1] = True
    kept_s = np.add.reduceat(_kept_work_s(spacing_s, last, model), starts)
    probabilities = model.stop_rate_per_s / total if total > 0 else np.full(model.stop_rate_per_s.size, 0.0)
    by_cause = rng.multinomial(failures, probabilities) if total > 0 else np.zeros((runs, probabilities.size), int)
    degradations = rng.poisson(model.degrade_rate_per_s * duration_s, size=runs)
    ettr = kept_s / duration_s
    ettr = np.maximum(ettr * (1.0 - degradations * model.degrade_loss_s / duration_s), 0.0)
    return RunSamples(failures, by_cause, degradations, ettr)


def simulate_runs(model: RunModel, runs: int, seed: int) -> RunSamples:
    """``runs`` independent runs of ``model`` drawn from ``numpy.random.default_rng(seed)``."""
    _check(model, runs)
    rng = np.random.default_rng(seed)
    expected = float(model.stop_rate_per_s.sum()) * model.days * DAY_S + 1.0
    per_chunk = max(1, int(_CHUNK_DRAWS // expected))
    parts = [_chunk(model, min(per_chunk, runs - start), rng) for start in range(0, runs, per_chunk)]
    return RunSamples(
        np.concatenate([p.interruptions for p in parts]),
        np.concatenate([p.by_cause for p in parts]),
        np.concatenate([p.degradations for p in parts]),
        np.concatenate([p.ettr for p in parts]),
    )
