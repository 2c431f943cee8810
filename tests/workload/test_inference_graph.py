"""Inference op graphs: prefill chunks fill the pipeline once, decode keeps it full, layer groups."""

import numpy as np
import pytest

from fabricsim.engine.simulate import execute
from fabricsim.workload.graph import CommPayload, Stream
from fabricsim.workload.inference_graph import Collective, InferencePlan, StagePass, build_inference_graph

PAYLOAD = CommPayload("all-reduce", 1 << 20, 8)


def _plan(p: int, chunks: int, steps: int, groups: int = 1) -> InferencePlan:
    prefill = StagePass(4.0, (Collective("tp-all-reduce", Stream.TP_COMM, 1.0, 8.0, PAYLOAD),), 0.5 if p > 1 else 0.0)
    decode = StagePass(1.0, (Collective("tp-all-reduce", Stream.TP_COMM, 0.25, 8.0, PAYLOAD),), 0.1 if p > 1 else 0.0)
    return InferencePlan(p, chunks, prefill, steps, decode, stage_gpus=8, layers=8, layer_groups=groups)


def _ends(plan: InferencePlan):
    built = build_inference_graph(plan)
    return built, execute(built.graph, np.array([op.duration_s for op in built.graph.ops])).end_s


@pytest.mark.parametrize("p", [1, 2, 4])
def test_decode_token_interval_is_pp_stage_passes(p):
    built, end = _ends(_plan(p, 0, 6))
    intervals = np.diff(end[np.array(built.token_done)], axis=1)
    assert intervals[:, -1] == pytest.approx(np.full(p, p * (1.25 + (0.1 if p > 1 else 0.0))))
    assert built.prefill_done == [-1] * p


@pytest.mark.parametrize(("p", "chunks"), [(1, 3), (2, 3), (4, 1)])
def test_prefill_fills_the_pipeline_once(p, chunks):
    built, end = _ends(_plan(p, chunks, 2))
    stage_pass = 5.0 + (0.5 if p > 1 else 0.0)
    assert end[built.prefill_done].max() == pytest.approx((chunks * p + p - 1) * stage_pass)
    first_decode = [ops[0] for ops in built.token_done]
    starts = execute(built.graph, np.array([op.duration_s for op in built.graph.ops])).start_s
    for j in range(p):  # a micro-batch decodes after its own prefill, not before
        first_op = min(i for i, op in enumerate(built.graph.ops) if op.name.startswith(f"decode step0.mb{j}"))
        assert starts[first_op] >= end[built.prefill_done[j]] - 1e-12
        assert end[first_decode[j]] > end[built.prefill_done[j]]


def test_layer_groups_split_compute_and_collectives():
    built, end = _ends(_plan(1, 1, 1, groups=4))
    ops = [op for op in built.graph.ops if "prefill" in op.name]
    compute = [op for op in ops if op.stream is Stream.COMPUTE]
    comm = [op for op in ops if op.stream is Stream.TP_COMM]
    assert len(compute) == len(comm) == 4
    assert sum(op.repeat for op in comm) == 8 and all(op.payload == PAYLOAD for op in comm)
    assert all(op.sync_points == 2 for op in compute)
    assert end[built.prefill_done[0]] == pytest.approx(5.0)
