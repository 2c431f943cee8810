"""Executor on synthetic graphs: stream order, dependencies, overlap, groups, exposed comm."""

import numpy as np
import pytest

from fabricsim.engine.simulate import comm_summary, execute, resolve_durations, simulate
from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream


def _graph() -> OpGraph:
    g = OpGraph()
    g.add_rank(RankClass("gpu"))
    return g


def test_stream_runs_in_issue_order_and_serialises():
    g = _graph()
    for k in range(3):
        g.add(Op(f"c{k}", 0, Stream.COMPUTE, "forward", 1.0))
    t = execute(g, resolve_durations(g, None))
    assert t.start_s.tolist() == [0.0, 1.0, 2.0]
    assert t.makespan_s == 3.0


def test_comm_overlaps_compute_on_another_stream():
    g = _graph()
    c0 = g.add(Op("c0", 0, Stream.COMPUTE, "backward", 1.0))
    g.add(Op("c1", 0, Stream.COMPUTE, "backward", 1.0, deps=(c0,)))
    g.add(Op("ar", 0, Stream.DP_COMM, "dp-all-reduce", 1.5, deps=(c0,)))
    t = execute(g, resolve_durations(g, None))
    assert t.makespan_s == pytest.approx(2.5)
    summary = comm_summary(g, t)
    assert summary.busy_s["dp-all-reduce"] == pytest.approx(1.5)
    assert summary.exposed_s["dp-all-reduce"] == pytest.approx(0.5)


def test_blocking_comm_adds_to_critical_path():
    g = _graph()
    c0 = g.add(Op("c0", 0, Stream.COMPUTE, "forward", 1.0))
    ar = g.add(Op("ar", 0, Stream.TP_COMM, "tp-all-reduce", 0.25, deps=(c0,)))
    g.add(Op("c1", 0, Stream.COMPUTE, "forward", 1.0, deps=(ar,)))
    t = execute(g, resolve_durations(g, None))
    assert t.makespan_s == pytest.approx(2.25)
    assert comm_summary(g, t).exposed_s["tp-all-reduce"] == pytest.approx(0.25)


def test_group_members_start_together():
    g = OpGraph()
    a, b = g.add_rank(RankClass("a")), g.add_rank(RankClass("b"))
    slow = g.add(Op("slow", a, Stream.COMPUTE, "forward", 2.0))
    g.add(Op("x-a", a, Stream.DP_COMM, "dp", 1.0, deps=(slow,), group="ar"))
    g.add(Op("x-b", b, Stream.DP_COMM, "dp", 1.0, group="ar"))
    t = execute(g, resolve_durations(g, None))
    assert t.start_s[1] == t.start_s[2] == 2.0
    assert t.makespan_s == 3.0


def test_payloads_are_timed_once_per_distinct_payload():
    calls = []

    def timer(p: CommPayload) -> float:
        calls.append(p)
        return p.size_bytes / 1e9

    g = _graph()
    for k in range(4):
        g.add(Op(f"ar{k}", 0, Stream.DP_COMM, "dp", 0.5, payload=CommPayload("all-reduce", 10**9, 8)))
    result = simulate(g, timer)
    assert len(calls) == 1
    assert result.step_time_s == pytest.approx(4.0)


def test_deadlock_is_reported():
    g = OpGraph()
    a, b = g.add_rank(RankClass("a")), g.add_rank(RankClass("b"))
    # a waits on group "x" before "y", b on "y" before "x": a classic NCCL ordering deadlock
    g.add(Op("ax", a, Stream.DP_COMM, "dp", 1.0, group="x"))
    g.add(Op("ay", a, Stream.DP_COMM, "dp", 1.0, group="y"))
    g.add(Op("by", b, Stream.DP_COMM, "dp", 1.0, group="y"))
    g.add(Op("bx", b, Stream.DP_COMM, "dp", 1.0, group="x"))
    with pytest.raises(ValueError, match="deadlocked"):
        execute(g, np.ones(4))


def test_payload_without_timer_keeps_nominal_duration_and_timer_repeats():
    g = _graph()
    g.add(Op("ar", 0, Stream.DP_COMM, "dp", 0.5, payload=CommPayload("all-reduce", 1, 2), repeat=3))
    assert resolve_durations(g, None).tolist() == [0.5]
    assert resolve_durations(g, lambda p: 0.25).tolist() == [0.75]
    # a network timer adds contention to the uncontended time; it never shortens it
    assert resolve_durations(g, lambda p: 0.1).tolist() == [0.5]
