"""Choosing a TPU slice's shape and twist for a job (planner/slice.py, issue 25 item 3)."""

import math

import pytest

from fabricsim import catalog
from fabricsim.collectives.torus import lattice_all_to_all_s_per_byte
from fabricsim.engine.training.simulate import TrainingCase
from fabricsim.errors import FabricsimError
from fabricsim.planner import slice as sl
from fabricsim.specs import ParallelLayout
from fabricsim.topology.ocs import check_slice

V5P = catalog.load_system("tpu-v5p")


@pytest.mark.parametrize("chips", [64, 128, 256, 512, 1024, 192, 6144])
def test_shapes_are_whole_cubes_within_the_pod_and_twisted_only_where_they_can_be(chips):
    shapes = sl.slice_shapes(chips, sl.PODS["tpu-v5p"])
    assert shapes and len(set(shapes)) == len(shapes)
    for shape in shapes:
        assert math.prod(shape.dims) == chips and all(d % 4 == 0 for d in shape.dims)
        assert all(s <= m for s, m in zip(sorted(shape.dims), (16, 16, 24), strict=True))
        check_slice(shape.dims, shape.twisted)  # the OCS builder accepts every candidate
    regular = {s.dims for s in shapes if not s.twisted}
    assert {s.dims for s in shapes if s.twisted} <= regular
    assert sl.default_shape(shapes).dims == tuple(sorted(sl.default_shape(shapes).dims))


def test_shape_counts_and_the_cube_like_default():
    pod = sl.PODS["tpu-v5p"]
    assert len(sl.slice_shapes(128, pod)) == 6  # 4x4x8 in 3 orders, each also twisted
    assert len(sl.slice_shapes(256, pod)) == 9  # 4x8x8 (3 orders, twisted too) and 4x4x16 (3 orders)
    assert sl.default_shape(sl.slice_shapes(256, pod)).dims == (4, 8, 8)
    assert sl.default_shape(sl.slice_shapes(512, pod)).dims == (8, 8, 8)
    assert sl.slice_shapes(96, pod) == [] and sl.slice_shapes(64 * 140, pod) == []  # not cubes; beyond 16x16x24


def _pick(model: str, chips: int, **layout: int) -> sl.SlicePick:
    shapes = sl.slice_shapes(chips, sl.PODS["tpu-v5p"])
    system = sl.slice_system(V5P, sl.default_shape(shapes).dims)
    case = TrainingCase(catalog.load_model(model), system, ParallelLayout(**layout), 256, 4096)
    return sl.choose_slice(case, V5P, shapes)


LAYOUTS = [
    ("llama3-70b", 256, {"tensor_parallel": 4, "data_parallel": 64}),
    ("llama3-70b", 256, {"tensor_parallel": 16, "data_parallel": 16}),
    ("llama3-70b", 256, {"tensor_parallel": 8, "data_parallel": 8, "pipeline_parallel": 4}),
    ("deepseek-v3", 128, {"tensor_parallel": 1, "data_parallel": 128, "expert_parallel": 128}),
    ("llama3-8b", 128, {"tensor_parallel": 4, "data_parallel": 32}),
]


@pytest.mark.parametrize(("model", "chips", "layout"), LAYOUTS)
def test_the_chosen_slice_is_never_slower_than_the_cube_like_default(model, chips, layout):
    pick = _pick(model, chips, **layout)
    assert pick.best.collective_s <= pick.default.collective_s
    assert pick.runner_up is not None and pick.best.collective_s <= pick.runner_up.collective_s
    assert pick.candidates == len(sl.slice_shapes(chips, sl.PODS["tpu-v5p"]))
    assert pick.best.collective_s > 0


def test_a_group_that_fills_two_dimensions_beats_a_partial_line():
    # TP 16 on the default 4x8x8 half-fills y (an open line); 4x4x16 gives it the whole x-y plane
    pick = _pick("llama3-70b", 256, tensor_parallel=16, data_parallel=16)
    assert pick.best.shape.dims in ((4, 4, 16), (16, 4, 4))
    assert pick.best.collective_s < 0.9 * pick.default.collective_s


def test_twisted_is_picked_when_the_jobs_all_to_all_dominates():
    """Jouppi et al., ISCA 2023: the twist raises all-to-all throughput (1.63x on 4x4x8)."""
    pick = _pick("deepseek-v3", 128, tensor_parallel=1, data_parallel=128, expert_parallel=128)
    by = dict(pick.best.by_category_s)
    assert by["ep-all-to-all"] > sum(by.values()) / 2  # the all-to-all dominates
    assert pick.best.shape.twisted and sorted(pick.best.shape.dims) == [4, 4, 8]
    gain = dict(pick.default.by_category_s)["ep-all-to-all"] / by["ep-all-to-all"]
    links = (V5P.scale_up.link.bandwidth_Bps,) * 3
    regular, twisted = (lattice_all_to_all_s_per_byte((4, 4, 8), t, links) for t in (False, True))
    lattice = regular / twisted
    assert gain == pytest.approx(lattice, rel=0.02)  # latency terms only


def test_a_twist_is_not_picked_where_it_cuts_a_short_ring():
    # TP 4 on x of a 4x4x8 slice: twisted, x's wraparound leaves the TP group (an open line of 4)
    pick = _pick("llama3-8b", 128, tensor_parallel=4, data_parallel=32)
    assert not pick.best.shape.twisted


def test_auto_parsing_and_systems_without_ocs():
    assert sl.is_auto("ocs-torus:auto") and not sl.is_auto("ocs-torus:4x4x8") and not sl.is_auto(None)
    with pytest.raises(FabricsimError, match="no other parameter"):
        sl.is_auto("ocs-torus:auto,twisted=1")
    with pytest.raises(FabricsimError, match="OCS-joined"):
        sl.ocs_pod(catalog.load_system("dgx-h100"))
    with pytest.raises(FabricsimError, match="no OCS slice"):
        sl.check_slice_chips(96, sl.PODS["tpu-v5p"], "tpu-v5p")
