"""The fabric-in-the-loop engine runs the torus schedule (per-dimension bidirectional rings) inside a
torus domain instead of a plain ring (issue 25 item 3)."""

import math
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim import catalog
from fabricsim.engine import fabric_loop
from fabricsim.engine.training.simulate import TrainingCase, training_job
from fabricsim.specs import ParallelLayout
from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream


def _dp_item_s(tp: int, dp: int, plain_ring: bool = False) -> tuple[float, int, int, tuple[int, ...]]:
    """Time alone (s) of a llama3-8b step's DP all-reduce on one TPU v5p cube (64 chips, flow
    fidelity), its size, ranks and torus rings; ``plain_ring``: the engine's plain ring instead."""
    system = catalog.load_system("tpu-v5p")
    seat = fabric_loop.system_fabric(system, 64)
    case = TrainingCase(catalog.load_model("llama3-8b"), system, ParallelLayout(tensor_parallel=tp, data_parallel=dp),
                        64, 4096)  # fmt: skip
    job = training_job(case, seat.host_of_gpu)
    (payload,) = {op.payload for op in job.graph.ops if op.category == "dp-all-reduce"}
    timer = fabric_loop.ItemTimer([job], seat.fabric, fabric_loop.FabricRun([], []))
    if not plain_ring:
        time_s = timer.alone((0, 0, payload))
    else:
        with (mock.patch.object(fabric_loop, "chosen_algorithm", lambda system, payload: "ring"),
              mock.patch.object(fabric_loop, "torus_ring_sizes", lambda system, payload: ())):
            time_s = timer.alone((0, 0, payload))
    return time_s, payload.size_bytes, payload.group_gpus, fabric_loop.torus_ring_sizes(system, payload)


@pytest.mark.parametrize(("tp", "dp", "rings"), [(16, 4, (4,)), (4, 16, (4, 4))])
def test_dp_all_reduce_on_a_torus_runs_the_torus_rings_within_the_bisection_bound(tp, dp, rings):
    torus_s, size, ranks, found = _dp_item_s(tp, dp)
    ring_s, *_ = _dp_item_s(tp, dp, plain_ring=True)
    assert found == rings
    link_Bps = catalog.load_system("tpu-v5p").scale_up.link.bandwidth_Bps
    # physics oracle: 2(p-1)/p S over the bidirectional bandwidth of the rings' dimensions (2 links
    # per direction per wrapped ring of 4: the bisection of the ring dimension, both halves)
    bound_s = 2 * (ranks - 1) / ranks * size / (len(rings) * 2 * link_Bps)
    assert torus_s >= bound_s * (1 - 1e-9)
    assert torus_s <= bound_s * 1.01  # the rings meet it (latency only on top)
    # a plain ring runs one way round (and over a 4x4 plane crosses multi-hop edges): clearly slower
    assert ring_s > 1.5 * torus_s


def test_a_group_off_the_torus_dimensions_keeps_the_plain_ring():
    system = catalog.load_system("dgx-h100")
    payload = CommPayload("all-reduce", 1 << 20, 8)
    assert fabric_loop.torus_ring_sizes(system, payload) == ()


_CUBE = {}


def _cube_seat():
    if not _CUBE:
        system = catalog.load_system("tpu-v5p")
        _CUBE["system"], _CUBE["seat"] = system, fabric_loop.system_fabric(system, 64)
    return _CUBE["system"], _CUBE["seat"]


@settings(max_examples=20, deadline=None)
@given(
    group=st.sampled_from([(4, 1), (16, 1), (64, 1), (4, 4), (16, 4), (4, 16)]),
    op=st.sampled_from(["all-reduce", "reduce-scatter", "all-gather"]),
    size=st.integers(1 << 20, 1 << 34),
)
def test_torus_collectives_on_the_fabric_never_beat_the_ring_dimensions_bound(group, op, size):
    """Property: on a TPU v5p cube at flow fidelity, every torus-routed collective takes at least
    phases x (p-1)/p x S over the bidirectional bandwidth of the dimensions it fills (2 links per
    direction each), and the rings meet it (within latency and 1%)."""
    system, seat = _cube_seat()
    ranks, stride = group
    payload = CommPayload(op, size, ranks, stride)
    graph = OpGraph()
    graph.add_rank(RankClass("r", 64))
    graph.add(Op("c", 0, Stream.DP_COMM, "dp-" + op, 1e-9, payload))
    job = fabric_loop.FabricJob("j", graph, seat.host_of_gpu, 1, system=system)
    rings = fabric_loop.torus_ring_sizes(system, payload)
    assert math.prod(rings) == ranks
    time_s = fabric_loop.ItemTimer([job], seat.fabric, fabric_loop.FabricRun([], [])).alone((0, 0, payload))
    phases = 2 if op == "all-reduce" else 1
    bound_s = phases * (ranks - 1) / ranks * size / (len(rings) * 2 * system.scale_up.link.bandwidth_Bps)
    assert bound_s * (1 - 1e-9) <= time_s <= bound_s * 1.01 + 1e-5
