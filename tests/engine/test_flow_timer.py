"""Flow-level timing of payloads: group tiling, NCCL-like channels, ECMP collisions as variability."""

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.collectives.schedules import ring_channels
from fabricsim.engine.flow_timer import FlowTimer, flow_timers, payload_flows, tiled_groups
from fabricsim.engine.training.simulate import TrainingCase, simulate_training
from fabricsim.engine.variability import Variability
from fabricsim.specs import ParallelLayout
from fabricsim.specs.fabric import TopologyKind
from fabricsim.topology.routing import Routing
from fabricsim.workload.graph import CommPayload


@pytest.mark.parametrize(("gpus", "ranks", "stride"), [(64, 8, 1), (64, 8, 8), (48, 6, 8), (64, 2, 32)])
def test_tiled_groups_cover_every_gpu_once_at_the_stride(gpus, ranks, stride):
    groups = tiled_groups(gpus, ranks, stride)
    assert sorted(groups.ravel().tolist()) == list(range(gpus))
    assert np.all(np.diff(groups, axis=1) == stride)


def test_ring_channels_enter_each_domain_at_a_different_gpu():
    rings = ring_channels(tiled_groups(32, 16, 1), per_domain=8)
    assert rings.shape == (2, 8, 16)
    for ring in rings[0]:
        assert sorted(ring.tolist()) == list(range(16))
    assert len({int(ring[8]) for ring in rings[0]}) == 8


def test_ring_bytes_follow_the_bus_factor():
    flows = payload_flows(CommPayload("all-reduce", 8_000, 4), tiled_groups(8, 4, 1))
    assert flows.count == 8
    assert flows.size_bytes[0] == pytest.approx(8_000 * 2 * 3 / 4)


def test_flow_time_of_a_node_local_all_reduce_is_bandwidth_bound():
    system = catalog.load_system("dgx-a100")
    timer = FlowTimer(system, 8)
    size = 1 << 30
    t = timer(CommPayload("all-reduce", size, 8))
    assert t == pytest.approx(size * 2 * 7 / 8 / system.scale_up.bandwidth_Bps, rel=0.05)
    assert timer(CommPayload("all-reduce", size, 1)) == 0.0


def _ecmp_tail(gpus: int):
    """Data-parallel llama3-8b on ``gpus`` A100s of a plain Clos (the ring's rail-aligned hops stay
    in the rail leaves of the catalog's rail-optimized fabric): ring hops between leaves cross the
    spines (ECMP)."""
    a100 = catalog.load_system("dgx-a100")
    clos = a100.scale_out.model_copy(update={"topology": TopologyKind.FAT_TREE})
    system = a100.model_copy(update={"scale_out": clos})
    case = TrainingCase(catalog.load_model("llama3-8b"), system, ParallelLayout(data_parallel=gpus), gpus, 2048)
    v = Variability(ecmp_rehash=True, seeds=6, seed=2)
    return simulate_training(case, flow_timers(system, gpus, ecmp_rehash=True, seed=2), v).tail


def test_ecmp_collisions_give_ordered_tails_that_grow_with_gpus():
    """Nominal = sprayed (collision-free) routes; each run re-hashes ECMP: P99 >= P50 >= nominal,
    and more flows over more spines collide worse."""
    small, large = _ecmp_tail(64), _ecmp_tail(256)
    for tail in (small, large):
        assert tail.p99_s >= tail.p50_s >= tail.nominal_s
    assert small.p99_s > small.nominal_s
    assert large.p99_s > small.p99_s


def test_routing_variants_share_the_route_table():
    timer = FlowTimer(catalog.load_system("dgx-a100"), 16, Routing.SPRAY)
    other = timer.with_routing(Routing.ECMP, 3)
    assert other.table is timer.table and other.gpus == 16
