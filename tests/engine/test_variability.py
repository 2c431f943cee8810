"""Stragglers, jitter and ECMP re-hashing: tails are ordered and grow with the number of GPUs."""

import numpy as np
import pytest

from fabricsim.engine.simulate import resolve_durations
from fabricsim.engine.variability import Variability, monte_carlo, perturbed
from fabricsim.errors import FabricsimError
from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream
from fabricsim.workload.training_graph import ChunkCosts, TrainingPlan, Transfer, build_training_graph


def _replicas(replicas: int, members: int = 1, steps: int = 20) -> OpGraph:
    """``replicas`` independent ranks computing ``steps`` ops, then one all-reduce all of them join."""
    g = OpGraph()
    payload = CommPayload("all-reduce", 1 << 24, replicas)
    for r in range(replicas):
        g.add_rank(RankClass(f"replica{r}", members=members))
        prev = None
        for k in range(steps):
            prev = g.add(Op(f"c{k}", r, Stream.COMPUTE, "forward", 1e-3, deps=() if prev is None else (prev,)))
        g.add(Op("ar", r, Stream.DP_COMM, "dp-all-reduce", payload=payload, deps=(prev,), group="ar"))
    return g


def _timers(seed):
    return lambda p: 1e-3 if seed is None else 1e-3 * (1 + (seed % 3) / 10)


def test_no_variability_is_inactive_and_identity():
    v = Variability()
    assert not v.active
    g = _replicas(2)
    base = resolve_durations(g, _timers(None))
    assert np.array_equal(perturbed(g, base, v, 0), base)


@pytest.mark.parametrize(
    "v",
    [
        Variability(straggler_fraction=0.1, straggler_slowdown=0.2, seeds=64),
        Variability(compute_jitter=0.05, seeds=64),
        Variability(link_jitter=0.2, seeds=64),
        Variability(ecmp_rehash=True, seeds=16),
    ],
)
def test_p99_ge_p50_ge_nominal(v):
    tail = monte_carlo(_replicas(8), _timers, v)
    assert tail.p99_s >= tail.p50_s >= tail.nominal_s
    assert tail.p99_s > tail.nominal_s


def test_p99_grows_with_gpus_at_fixed_jitter():
    v = Variability(compute_jitter=0.05, straggler_fraction=0.01, straggler_slowdown=0.1, seeds=100, seed=7)
    p99 = [monte_carlo(_replicas(n, members=4), _timers, v).p99_s for n in (1, 4, 16)]
    assert p99[0] < p99[1] < p99[2]


def test_runs_are_seeded_and_reproducible():
    v = Variability(compute_jitter=0.1, seeds=5, seed=3)
    g = _replicas(3)
    assert monte_carlo(g, _timers, v) == monte_carlo(g, _timers, v)
    other = monte_carlo(g, _timers, Variability(compute_jitter=0.1, seeds=5, seed=4))
    assert other.samples_s != monte_carlo(g, _timers, v).samples_s


@pytest.mark.parametrize(
    "v",
    [
        Variability(straggler_fraction=1.5),
        Variability(compute_jitter=-0.1),
        Variability(seeds=0),
        Variability(seed=-1),
    ],
)
def test_bad_values_are_user_errors(v):
    with pytest.raises(FabricsimError):
        v.validate()


def _training_graph(data_parallel: int) -> OpGraph:
    """A 4-stage, 8-micro-batch pipeline of TP-8 stages whose DP replicas all-reduce at the end."""
    bucket = Transfer(
        0.05, "dp-all-reduce", CommPayload("all-reduce", 1 << 26, data_parallel, 32), stream=Stream.DP_COMM
    )
    chunks = tuple(ChunkCosts(0.1, 0.2, layers=4) for _ in range(4))
    plan = TrainingPlan(
        4,
        1,
        8,
        chunks,
        grad_buckets=((bucket,),) * 4,
        optimizer_s=(0.01,) * 4,
        tensor_parallel=8,
        data_parallel=data_parallel,
    )
    return build_training_graph(plan, replicas=data_parallel)


def test_training_step_p99_grows_with_data_parallel_replicas():
    """Max-of-many: at fixed per-GPU kernel jitter, more GPUs meeting in the gradient all-reduce
    make the slowest replica, hence the P50 and P99 step, later."""
    v = Variability(compute_jitter=0.05, seeds=40, seed=11)
    tails = {dp: monte_carlo(_training_graph(dp), lambda seed: None, v) for dp in (1, 4, 16)}
    for tail in tails.values():
        assert tail.p99_s >= tail.p50_s >= tail.nominal_s
    assert tails[1].nominal_s == pytest.approx(tails[16].nominal_s)
    assert tails[1].p99_s < tails[4].p99_s < tails[16].p99_s
    assert tails[1].p50_s < tails[4].p50_s < tails[16].p50_s
