"""Training op graphs: Megatron schedules, bubbles, overlap of gradient buckets, folding."""

import pytest

from fabricsim.engine.simulate import comm_summary, execute, resolve_durations, simulate
from fabricsim.workload.graph import CommPayload, Stream
from fabricsim.workload.training_graph import (
    ChunkCosts,
    TrainingPlan,
    Transfer,
    build_training_graph,
    interleaved,
    one_f_one_b,
)


def _plan(p: int, m: int, v: int = 1, **kw) -> TrainingPlan:
    f, b = 1.0 / v, 2.0 / v
    chunks = tuple(ChunkCosts(forward_s=f, backward_s=b, layers=2) for _ in range(p * v))
    return TrainingPlan(pipeline_parallel=p, virtual_stages=v, micro_batches=m, chunks=chunks, **kw)


def _makespan(plan: TrainingPlan, replicas: int = 1) -> float:
    g = build_training_graph(plan, replicas)
    return execute(g, resolve_durations(g, None)).makespan_s


def test_one_f_one_b_order_has_warmup_steady_cooldown():
    order = one_f_one_b(4, 0, 8)
    assert len(order) == 16
    assert [fwd for fwd, _, _ in order[:4]] == [True, True, True, True]
    assert order[4] == (False, 0, 0)
    assert one_f_one_b(4, 3, 8)[:2] == [(True, 0, 0), (False, 0, 0)]


def test_interleaved_order_covers_every_chunk_once():
    order = interleaved(4, 1, 8, 2)
    assert sorted(order) == sorted({(f, mb, c) for f in (True, False) for mb in range(8) for c in range(2)})


@pytest.mark.parametrize(("p", "m"), [(1, 4), (4, 4), (4, 16), (8, 3)])
def test_one_f_one_b_makespan_is_the_textbook_bubble(p, m):
    assert _makespan(_plan(p, m)) == pytest.approx((m + p - 1) * 3.0)


@pytest.mark.parametrize(("p", "m", "v"), [(4, 8, 2), (4, 16, 4), (2, 4, 3)])
def test_interleaving_divides_the_bubble_by_v(p, m, v):
    assert _makespan(_plan(p, m, v)) == pytest.approx((m + (p - 1) / v) * 3.0)


def test_blocking_p2p_and_tp_comm_lie_on_the_critical_path():
    p2p = Transfer(0.1, "pp-send-recv", CommPayload("send-recv", 1 << 20, 2), stream=Stream.PP_SEND)
    tp = Transfer(0.05, "tp-all-reduce", CommPayload("all-reduce", 1 << 20, 8), repeat=4)
    chunks = tuple(ChunkCosts(1.0, 2.0, (tp,), (tp,), layers=2) for _ in range(2))
    plan = TrainingPlan(2, 1, 4, chunks, p2p=p2p, tensor_parallel=8)
    assert _makespan(plan) > (4 + 1) * 3.1
    result = simulate(build_training_graph(plan), None)
    assert result.comm.exposed_s["tp-all-reduce"] == pytest.approx(result.comm.busy_s["tp-all-reduce"])


def _dp_plan(overlap: bool) -> TrainingPlan:
    bucket = Transfer(
        0.4, "dp-all-reduce", CommPayload("all-reduce", 1 << 28, 4, 8, "scale-out"), stream=Stream.DP_COMM
    )
    return _plan(
        2, 4, grad_buckets=((bucket,) * 4,) * 2, optimizer_s=(0.1, 0.1), data_parallel=4, overlap_grad_reduce=overlap
    )


def test_gradient_buckets_overlap_with_the_last_backward():
    overlapped, serial = _makespan(_dp_plan(True)), _makespan(_dp_plan(False))
    assert serial == pytest.approx((4 + 1) * 3.0 + 4 * 0.4 + 0.1)
    assert overlapped < serial
    g = build_training_graph(_dp_plan(True))
    summary = comm_summary(g, execute(g, resolve_durations(g, None)))
    assert summary.exposed_s["dp-all-reduce"] < summary.busy_s["dp-all-reduce"]


def test_unfolding_replicas_changes_nothing_without_variability():
    plan = _dp_plan(True)
    folded, unfolded = build_training_graph(plan), build_training_graph(plan, replicas=4)
    assert folded.folded["data_parallel_replicas_folded"] == 3
    assert unfolded.folded["data_parallel_replicas_simulated"] == 4
    assert len(unfolded.ops) == 4 * len(folded.ops)
    assert _makespan(plan, 4) == pytest.approx(_makespan(plan))
    assert folded.gpus_represented == unfolded.gpus_represented


def test_mismatched_chunk_count_is_rejected():
    plan = TrainingPlan(2, 2, 4, _plan(2, 4).chunks)
    with pytest.raises(ValueError, match="chunk costs"):
        build_training_graph(plan)
