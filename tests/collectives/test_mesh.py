"""Collectives on a full-mesh scale-up domain (issue 25): the mesh algorithm, where it runs, the
group's bandwidth on a mesh, and its flow schedules."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.collectives import Algorithm, CollectiveOp, estimate, place_group, runnable
from fabricsim.collectives.schedules import ScheduleRequest, bandwidth_step, build_schedule
from fabricsim.errors import FabricsimError

MI300X = catalog.load_system("mi300x-8")
LINK_Bps = catalog.load_link("infinity-fabric-mi300").bandwidth_Bps  # 64 GB/s, one link per GPU pair
GiB = 2**30


@pytest.mark.parametrize("op", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"])
def test_auto_picks_the_mesh_inside_an_amd_node(op) -> None:
    assert estimate(CollectiveOp(op), GiB, place_group(MI300X, 8)).algorithm is Algorithm.MESH


def test_mesh_all_to_all_is_alpha_plus_a_block_over_one_link() -> None:
    """RCCL-style direct all-to-all: S/n to each peer over its own 64 GB/s link, in parallel."""
    t = estimate(CollectiveOp.ALL_TO_ALL, GiB, place_group(MI300X, 8), Algorithm.MESH).time_s
    beta = GiB / 8 / LINK_Bps
    assert beta < t < beta + 20e-6


def test_mesh_all_reduce_is_two_direct_phases() -> None:
    group = place_group(MI300X, 8)
    a2a = estimate(CollectiveOp.ALL_TO_ALL, GiB, group, Algorithm.MESH).time_s
    ar = estimate(CollectiveOp.ALL_REDUCE, GiB, group, Algorithm.MESH).time_s
    assert ar == pytest.approx(2 * a2a)


def test_a_smaller_group_on_a_mesh_gets_only_its_pair_links() -> None:
    """4 of the 8 GPUs reach 3 peers over 3 links, not the GPU's 7 (a switch would give all 7)."""
    assert place_group(MI300X, 8).scale_up_Bps == pytest.approx(7 * LINK_Bps)
    assert place_group(MI300X, 4).scale_up_Bps == pytest.approx(3 * LINK_Bps)
    assert place_group(MI300X, 2).scale_up_Bps == pytest.approx(LINK_Bps)
    h100 = catalog.load_system("dgx-h100")
    assert place_group(h100, 2).scale_up_Bps == place_group(h100, 8).scale_up_Bps


def test_mesh_is_unavailable_behind_a_switch_and_across_nodes() -> None:
    assert Algorithm.MESH not in runnable(CollectiveOp.ALL_REDUCE, place_group(catalog.load_system("dgx-h100"), 8))
    assert Algorithm.MESH not in runnable(CollectiveOp.ALL_REDUCE, place_group(MI300X, 16))
    assert Algorithm.MESH not in runnable(CollectiveOp.BROADCAST, place_group(MI300X, 8))
    with pytest.raises(FabricsimError, match="not a full mesh"):
        estimate(CollectiveOp.ALL_REDUCE, GiB, place_group(catalog.load_system("dgx-h100"), 8), Algorithm.MESH)


def test_gaudi3_mesh_uses_three_ports_per_peer() -> None:
    gaudi = catalog.load_system("gaudi3-8")
    port_Bps = catalog.load_link("roce-200").bandwidth_Bps
    assert gaudi.scale_up.peer_Bps == pytest.approx(3 * port_Bps)
    t = estimate(CollectiveOp.ALL_TO_ALL, GiB, place_group(gaudi, 8)).time_s
    assert t > GiB / 8 / (3 * port_Bps)


def test_mesh_flow_schedules_send_every_peer_its_block() -> None:
    steps = build_schedule(ScheduleRequest(CollectiveOp.ALL_REDUCE, Algorithm.MESH, 8, GiB))
    assert len(steps) == 2
    for step in steps:
        assert len(step.src) == 8 * 7 and np.all(step.src != step.dst)
        assert np.allclose(step.size_bytes, GiB / 8)
    step = bandwidth_step(CollectiveOp.ALL_REDUCE, np.arange(8)[None, :], GiB, algorithm=Algorithm.MESH)
    assert len(step.src) == 56 and np.allclose(step.size_bytes, GiB * 2 / 8)
