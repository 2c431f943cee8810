"""Seeded variability: stragglers, kernel and link jitter, ECMP re-hashing; Monte-Carlo tails (layer L6).

Model (one run = one seed):

- **Stragglers**: each GPU is, with probability ``straggler_fraction``, slower by
  ``straggler_slowdown`` (a fraction) for the whole run (thermal throttling, a weak part, a noisy
  neighbour); each op on it takes ``1 + straggler_slowdown`` times longer.
- **Compute jitter**: each compute op on each GPU takes ``1 + compute_jitter * |Z|`` times its
  nominal time, Z standard normal (a half-normal delay: kernels are never faster than the nominal
  time the compute model gives, only late).
- **Link jitter**: each transfer takes ``1 + link_jitter * |Z|`` times its time, the max over the
  links its group crosses (a ring runs at its slowest link).
- **ECMP re-hashing**: with a flow-level network, each run re-draws the routing hash seed, so flows
  collide differently (the timer factory gets the run's seed).

GPUs in lock-step inside an op (a rank class's ``members``, e.g. a tensor-parallel group that meets
in a collective ``sync_points`` times per op) wait for the slowest: the op's factor is the mean
over its sync points of the max over members. Since every factor is >= 1 and the makespan of an op
graph with fixed stream order is monotone in op durations, every run is >= the no-variability run,
so P99 >= P50 >= the nominal time; the analytic fast path stays the nominal (mean-free) figure.
Max-of-many: more GPUs in lock-step or more replicas meeting at a collective make the tail grow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from fabricsim.engine.simulate import CommTimer, execute, resolve_durations
from fabricsim.errors import FabricsimError
from fabricsim.workload.graph import OpGraph

MAX_LINK_DRAWS = 4096  # a collective over more GPUs draws its slowest link from this many


@dataclass(frozen=True, slots=True)
class Variability:
    """What varies from run to run, and how many seeded runs to take."""

    straggler_fraction: float = 0.0
    straggler_slowdown: float = 0.0
    compute_jitter: float = 0.0
    link_jitter: float = 0.0
    ecmp_rehash: bool = False
    seeds: int = 1
    seed: int = 0

    @property
    def active(self) -> bool:
        return bool(
            (self.straggler_fraction and self.straggler_slowdown)
            or self.compute_jitter
            or self.link_jitter
            or self.ecmp_rehash
        )

    @property
    def per_gpu(self) -> bool:
        """Whether GPUs or links differ from each other in a run (else replicas stay identical)."""
        return bool((self.straggler_fraction and self.straggler_slowdown) or self.compute_jitter or self.link_jitter)

    def validate(self) -> None:
        """Raise :class:`FabricsimError` for values outside their ranges."""
        if not 0.0 <= self.straggler_fraction <= 1.0:
            raise FabricsimError("straggler", f"fraction must be in [0, 1], got {self.straggler_fraction}")
        for flag, value in (
            ("straggler", self.straggler_slowdown),
            ("jitter", self.compute_jitter),
            ("link-jitter", self.link_jitter),
        ):
            if not 0.0 <= value <= 10.0:
                raise FabricsimError(flag, f"must be between 0 and 10 (a fraction of the nominal time), got {value}")
        if not 1 <= self.seeds <= 100_000:
            raise FabricsimError("seeds", f"must be between 1 and 100000, got {self.seeds}")
        if self.seed < 0:
            raise FabricsimError("seed", f"must be >= 0, got {self.seed}")


def _compute_factors(graph: OpGraph, v: Variability, rng: np.random.Generator) -> np.ndarray:
    """Per-op slowdown of compute ops (1.0 for communication ops)."""
    ops = graph.ops
    factors = np.ones(len(ops))
    for r, rank in enumerate(graph.ranks):
        slow = np.where(rng.random(rank.members) < v.straggler_fraction, 1.0 + v.straggler_slowdown, 1.0)
        by_sync: dict[int, list[int]] = {}
        for i, op in enumerate(ops):
            if op.rank == r and not op.is_comm:
                by_sync.setdefault(max(op.sync_points, 1), []).append(i)
        for k, idx in sorted(by_sync.items()):
            if v.compute_jitter:
                z = np.abs(rng.standard_normal((len(idx), k, rank.members)))
                per_gpu = slow * (1.0 + v.compute_jitter * z)
                factors[idx] = per_gpu.max(axis=2).mean(axis=1)
            else:
                factors[idx] = slow.max()
    return factors


def _link_factors(graph: OpGraph, v: Variability, rng: np.random.Generator) -> np.ndarray:
    """Per-op slowdown of communication ops; the ops of one group share their draw."""
    factors = np.ones(len(graph.ops))
    if not v.link_jitter:
        return factors
    shared: dict[str, float] = {}
    for i, op in enumerate(graph.ops):
        if not op.is_comm:
            continue
        if op.group is not None and op.group in shared:
            factors[i] = shared[op.group]
            continue
        links = min(op.payload.group_gpus if op.payload is not None else 1, MAX_LINK_DRAWS)
        factors[i] = 1.0 + v.link_jitter * float(np.abs(rng.standard_normal(links)).max())
        if op.group is not None:
            shared[op.group] = factors[i]
    return factors


def perturbed(graph: OpGraph, durations_s: np.ndarray, v: Variability, run: int) -> np.ndarray:
    """Durations (s) of one seeded run: nominal durations times straggler and jitter factors."""
    rng = np.random.default_rng([v.seed, run])
    return durations_s * _compute_factors(graph, v, rng) * _link_factors(graph, v, rng)


@dataclass(frozen=True, slots=True)
class TailResult:
    """Monte-Carlo makespans over seeds, next to the no-variability makespan (all in s)."""

    nominal_s: float
    samples_s: tuple[float, ...]

    @property
    def p50_s(self) -> float:
        return float(np.quantile(self.samples_s, 0.5))

    @property
    def p99_s(self) -> float:
        return float(np.quantile(self.samples_s, 0.99))

    @property
    def mean_s(self) -> float:
        return float(np.mean(self.samples_s))


TimerFactory = Callable[[int | None], CommTimer | None]


def monte_carlo(
    graph: OpGraph,
    timers: TimerFactory,
    v: Variability,
    durations_for: Callable[[int | None], np.ndarray] | None = None,
) -> TailResult:
    """Run ``graph`` once without variability and ``v.seeds`` times with it.

    ``timers(None)`` gives the nominal communication timer (no collisions: uncontended or ideally
    spread routes); ``timers(seed)`` a timer whose routing hashes with that seed, used per run when
    ``ecmp_rehash`` is on. Without ``ecmp_rehash`` every run uses the nominal timer.
    ``durations_for(seed)`` replaces the timers when the op durations come from elsewhere (the
    fabric in the loop): ``None`` for the nominal run, a hash seed per re-hashed run.
    Cost: (seeds + 1) executions of the graph.
    """
    v.validate()
    if durations_for is None:
        durations_for = partial(_resolved, graph, timers)
    nominal = durations_for(None)
    nominal_s = execute(graph, nominal).makespan_s
    samples = []
    for run in range(v.seeds):
        base = durations_for(v.seed * 1_000_003 + run + 1) if v.ecmp_rehash else nominal
        samples.append(execute(graph, perturbed(graph, base, v, run)).makespan_s)
    return TailResult(nominal_s, tuple(samples))


def _resolved(graph: OpGraph, timers: TimerFactory, seed: int | None) -> np.ndarray:
    return resolve_durations(graph, timers(seed))
