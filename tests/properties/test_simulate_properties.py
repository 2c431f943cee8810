"""Physical bounds of the executor on random op graphs, and of the pipeline schedules."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fabricsim.engine.simulate import execute
from fabricsim.engine.variability import Variability, monte_carlo
from fabricsim.workload.graph import Op, OpGraph, RankClass, Stream
from fabricsim.workload.training_graph import ChunkCosts, TrainingPlan, build_training_graph

STREAMS = [Stream.COMPUTE, Stream.TP_COMM, Stream.DP_COMM]


@st.composite
def graphs(draw) -> tuple[OpGraph, np.ndarray]:
    ranks = draw(st.integers(1, 3))
    n = draw(st.integers(1, 30))
    g = OpGraph()
    for r in range(ranks):
        g.add_rank(RankClass(f"r{r}", members=draw(st.integers(1, 4))))
    durations = []
    for i in range(n):
        deps = tuple(sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=3))))) if i else ()
        stream = draw(st.sampled_from(STREAMS))
        d = draw(st.floats(0.0, 5.0))
        g.add(Op(f"op{i}", draw(st.integers(0, ranks - 1)), stream, stream.value, d, deps=deps))
        durations.append(d)
    return g, np.array(durations)


def _longest_chain(g: OpGraph, d: np.ndarray) -> float:
    finish = np.zeros(len(g.ops))
    for i, op in enumerate(g.ops):
        finish[i] = d[i] + max((finish[j] for j in op.deps), default=0.0)
    return float(finish.max())


@given(graphs())
def test_makespan_between_critical_path_and_serial_sum(case):
    g, d = case
    t = execute(g, d)
    per_stream: dict[tuple[int, Stream], float] = {}
    for op, dur in zip(g.ops, d, strict=True):
        per_stream[(op.rank, op.stream)] = per_stream.get((op.rank, op.stream), 0.0) + dur
    lower = max(_longest_chain(g, d), max(per_stream.values()))
    assert lower - 1e-9 <= t.makespan_s <= d.sum() + 1e-9
    for i, op in enumerate(g.ops):
        assert abs(t.end_s[i] - t.start_s[i] - d[i]) < 1e-9
        assert all(t.start_s[i] >= t.end_s[j] - 1e-12 for j in op.deps)


@given(graphs(), st.floats(1.0, 3.0))
def test_longer_ops_never_shorten_the_step(case, factor):
    g, d = case
    slower = d.copy()
    slower[::2] *= factor
    assert execute(g, slower).makespan_s >= execute(g, d).makespan_s - 1e-9


@given(graphs())
def test_execution_is_deterministic(case):
    g, d = case
    a, b = execute(g, d), execute(g, d)
    assert np.array_equal(a.start_s, b.start_s) and np.array_equal(a.end_s, b.end_s)


@given(st.integers(1, 6), st.integers(1, 12), st.floats(0.1, 2.0), st.floats(0.1, 4.0))
def test_one_f_one_b_matches_the_closed_form(p, m, f, b):
    plan = TrainingPlan(p, 1, m, tuple(ChunkCosts(f, b) for _ in range(p)))
    g = build_training_graph(plan)
    t = execute(g, np.array([op.duration_s for op in g.ops]))
    assert abs(t.makespan_s - (m + p - 1) * (f + b)) <= 1e-9 * (m + p) * (f + b)


@given(st.integers(0, 1000), st.floats(0.0, 0.3), st.floats(0.0, 0.5))
def test_tails_never_beat_the_nominal_step(seed, jitter, slowdown):
    plan = TrainingPlan(2, 1, 4, tuple(ChunkCosts(1.0, 2.0, layers=2) for _ in range(2)), tensor_parallel=4)
    v = Variability(straggler_fraction=0.1, straggler_slowdown=slowdown, compute_jitter=jitter, seeds=5, seed=seed)
    tail = monte_carlo(build_training_graph(plan), lambda s: None, v)
    assert min(tail.samples_s) >= tail.nominal_s - 1e-9
    assert tail.p99_s >= tail.p50_s >= tail.nominal_s - 1e-9
