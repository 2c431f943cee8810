"""The fabric in the loop: groups per stage, flows per item, contention between what is in flight."""

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.api.topologies import build_topology
from fabricsim.collectives.schedules import ring_channels
from fabricsim.engine.fabric_loop import (
    Fabric,
    FabricJob,
    item_flows,
    simulate_jobs,
    stage_groups,
    system_fabric,
    tiled_groups,
)
from fabricsim.engine.training.simulate import TrainingCase, simulate_training
from fabricsim.engine.variability import Variability
from fabricsim.network.base import FlowSet
from fabricsim.network.flow import FlowNetwork
from fabricsim.specs import ParallelLayout
from fabricsim.specs.fabric import TopologyKind
from fabricsim.topology.routing import route_table
from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream


@pytest.mark.parametrize(("gpus", "ranks", "stride"), [(64, 8, 1), (64, 8, 8), (48, 6, 8), (64, 2, 32)])
def test_tiled_groups_cover_every_gpu_once_at_the_stride(gpus, ranks, stride):
    groups = tiled_groups(gpus, ranks, stride)
    assert sorted(groups.ravel().tolist()) == list(range(gpus))
    assert np.all(np.diff(groups, axis=1) == stride)


def test_stage_groups_stay_in_their_stage_and_sends_go_to_the_next():
    tp, dp = CommPayload("all-reduce", 1, 8), CommPayload("all-reduce", 1, 2, 8)
    send = CommPayload("send-recv", 1, 2, 16)
    for payload in (tp, dp):
        groups = stage_groups(64, 4, 1, payload)
        assert groups.size == 16 and groups.min() >= 16 and groups.max() < 32
    assert np.array_equal(stage_groups(64, 4, 1, send), np.stack([np.arange(16, 32), np.arange(32, 48)], axis=1))
    assert np.array_equal(stage_groups(64, 4, 3, send)[:, 1], np.arange(32, 48))  # the last stage sends back


def test_ring_channels_enter_each_domain_at_a_different_gpu():
    rings = ring_channels(tiled_groups(32, 16, 1), per_domain=8)
    assert rings.shape == (2, 8, 16)
    for ring in rings[0]:
        assert sorted(ring.tolist()) == list(range(16))
    assert len({int(ring[8]) for ring in rings[0]}) == 8


def _job(graph: OpGraph, hosts, stages: int = 1, name: str = "job") -> FabricJob:
    return FabricJob(name, graph, np.asarray(hosts, dtype=np.int64), stages)


def _one_collective(payload: CommPayload, nominal_s: float = 1e-6) -> OpGraph:
    graph = OpGraph()
    graph.add_rank(RankClass("r", payload.group_gpus))
    graph.add(Op("ar", 0, Stream.DP_COMM, "dp-all-reduce", nominal_s, payload))
    return graph


def test_ring_bytes_follow_the_bus_factor():
    flows = item_flows(_job(_one_collective(CommPayload("all-reduce", 8_000, 4)), range(4)), 0,
                       CommPayload("all-reduce", 8_000, 4), 8)
    assert flows.count == 4
    assert flows.size_bytes[0] == pytest.approx(8_000 * 2 * 3 / 4)


def test_a_node_local_all_reduce_alone_is_bandwidth_bound():
    system = catalog.load_system("dgx-a100")
    seat = system_fabric(system, 8)
    size = 1 << 30
    (result,), _ = simulate_jobs([_job(_one_collective(CommPayload("all-reduce", size, 8)), seat.host_of_gpu)],
                                 seat.fabric)
    assert result.step_time_s == pytest.approx(size * 2 * 7 / 8 / system.scale_up.bandwidth_Bps, rel=0.05)


def _leaf_spine(oversubscription: float = 4.0) -> Fabric:
    topo = build_topology(f"leaf-spine:leaves=4,spines=1,hosts_per_leaf=4,oversubscription={oversubscription}")
    return Fabric(topo, FlowNetwork(route_table(topo)), domain_gpus=1)


def test_jobs_whose_rings_share_the_spine_slow_each_other_and_disjoint_ones_do_not():
    fabric = _leaf_spine()
    payload = CommPayload("all-reduce", 1 << 28, 2)
    a = _job(_one_collective(payload), [0, 4], name="a")  # leaves 0 and 1: across the spine
    b_shared = _job(_one_collective(payload), [1, 5], name="b")  # same leaves: shares both uplinks
    b_apart = _job(_one_collective(payload), [2, 3], name="b")  # one leaf: never leaves it
    (alone,), _ = simulate_jobs([a], fabric)
    shared, run = simulate_jobs([a, b_shared], fabric)
    apart, _ = simulate_jobs([a, b_apart], fabric)
    assert shared[0].step_time_s > 1.5 * alone.step_time_s and shared[1].step_time_s > 1.5 * alone.step_time_s
    assert apart[0].step_time_s == pytest.approx(alone.step_time_s, rel=1e-9)
    assert run.network_runs == 2 and len(run.mixes) == 1  # each job alone on the network, the pair once


def test_a_background_tenant_slows_a_collective_through_the_spine():
    fabric = _leaf_spine()
    job = _job(_one_collective(CommPayload("all-reduce", 1 << 28, 2)), [0, 4])
    (quiet,), _ = simulate_jobs([job], fabric)
    src, dst = np.arange(4, dtype=np.int64) + 0, np.arange(4, dtype=np.int64) + 8
    rate = np.full(4, 0.5 * fabric.topology.line_rate_Bps)
    background = FlowSet(src, dst, np.full(4, np.inf), np.zeros(4), np.arange(4), rate)
    (busy,), _ = simulate_jobs([job], Fabric(fabric.topology, fabric.network, 1, background))
    assert busy.step_time_s > 1.2 * quiet.step_time_s


def test_pipeline_phases_repeat_and_are_timed_once():
    """A 1F1B step on a rail fabric: hundreds of collectives, a handful of distinct mixes."""
    system = catalog.load_system("dgx-h100")
    layout = ParallelLayout(tensor_parallel=8, pipeline_parallel=4, data_parallel=2)
    case = TrainingCase(catalog.load_model("llama3-8b"), system, layout, 64, 2048)
    sim = simulate_training(case, lambda run: None, None, system_fabric(system, 64))
    comm_ops = sum(op.payload is not None for op in sim.graph.ops)
    assert comm_ops > 100 and sim.fabric_run is not None
    assert sim.fabric_run.network_runs < comm_ops / 4


def _ecmp_tail(gpus: int):
    """Data-parallel llama3-8b on ``gpus`` A100s of a plain Clos (the ring's rail-aligned hops stay
    in the rail leaves of the catalog's rail-optimized fabric): ring hops between leaves cross the
    spines (ECMP)."""
    a100 = catalog.load_system("dgx-a100")
    clos = a100.scale_out.model_copy(update={"topology": TopologyKind.FAT_TREE})
    system = a100.model_copy(update={"scale_out": clos})
    case = TrainingCase(catalog.load_model("llama3-8b"), system, ParallelLayout(data_parallel=gpus), gpus, 2048)
    v = Variability(ecmp_rehash=True, seeds=6, seed=2)
    return simulate_training(case, lambda run: None, v, system_fabric(system, gpus, "spray")).tail


def test_ecmp_collisions_give_ordered_tails_that_grow_with_gpus():
    """Nominal = sprayed (collision-free) routes; each run re-hashes ECMP: P99 >= P50 >= nominal,
    and more flows over more spines collide worse."""
    small, large = _ecmp_tail(64), _ecmp_tail(256)
    for tail in (small, large):
        assert tail.p99_s >= tail.p50_s >= tail.nominal_s
    assert small.p99_s > small.nominal_s
    assert large.p99_s > small.p99_s
