"""Physics of a torus scale-up domain (issue 25, Done-when): on random torus shapes and message
sizes, no all-reduce the model picks or can be forced to run beats 2(p-1)/p S over the
bidirectional bandwidth of the rings the group spans (one ring dimension: exactly that ring's
bidirectional bandwidth, 2 links per direction with the wraparound), and no all-to-all beats the
bisection of its torus.

The bounds are computed here from the catalog link alone (Patarasuk & Yuan, JPDC 2009, for the
all-reduce volume 2(p-1)/p S; the bisection cut for all-to-all: p S / 4 bytes each way across
2 p / n links of a wrapped dimension of n)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.catalog import load_system
from fabricsim.collectives import Algorithm, CollectiveOp, estimate, place_group, runnable
from fabricsim.specs import SystemSpec

LINK_BPS = load_system("tpu-v5p").scale_up.link.bandwidth_Bps  # 100 GB/s per ICI link per direction


def _torus_system(dims: tuple[int, ...]) -> SystemSpec:
    """tpu-v5p with a domain of shape ``dims`` (one chip per host so every shape is a whole domain)."""
    data = load_system("tpu-v5p").model_dump()
    data["gpus_per_node"] = 1
    data["scale_out"]["nics_per_node"] = 1
    data["scale_up"].update(domain_gpus=math.prod(dims), dims=dims)
    return SystemSpec.model_validate(data)


def _ring_Bps(n: int) -> float:
    return LINK_BPS * (2.0 if n > 2 else 1.0)


shapes = st.lists(st.integers(2, 8), min_size=1, max_size=3).map(tuple)


@settings(max_examples=200, deadline=None)
@given(dims=shapes, spanned=st.integers(1, 3), size=st.integers(1, 2**36), data=st.data())
def test_torus_all_reduce_never_beats_the_ring_dimensions_bidirectional_bound(dims, spanned, size, data) -> None:
    ring_dims = dims[: min(spanned, len(dims))]
    p = math.prod(ring_dims)
    group = place_group(_torus_system(dims), p)
    op = CollectiveOp.ALL_REDUCE
    algorithm = data.draw(st.sampled_from([Algorithm.AUTO, *runnable(op, group)]))
    bound_s = 2 * (p - 1) / p * size / sum(_ring_Bps(n) for n in ring_dims)
    assert estimate(op, size, group, algorithm).time_s >= bound_s * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(dims=shapes, size=st.integers(1, 2**36), data=st.data())
def test_torus_all_to_all_never_beats_the_bisection(dims, size, data) -> None:
    group = place_group(_torus_system(dims), math.prod(dims))
    op = CollectiveOp.ALL_TO_ALL
    algorithm = data.draw(st.sampled_from([Algorithm.AUTO, *runnable(op, group)]))
    bound_s = max(size * n / (4 * _ring_Bps(n)) for n in dims)
    assert estimate(op, size, group, algorithm).time_s >= bound_s * (1 - 1e-12)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(3, 8), k=st.integers(1, 3), size=st.integers(2**24, 2**36))
def test_equal_dimension_torus_all_reduce_reaches_the_bound(n, k, size) -> None:
    """The bound is tight: on a k-D torus of equal dimensions the rotated per-dimension rings keep
    every link busy, so the torus form is within its latency of the bound (the test above would
    fail if the model used more than the rings' links)."""
    dims = (n,) * k
    p = n**k
    group = place_group(_torus_system(dims), p)
    t = estimate(CollectiveOp.ALL_REDUCE, size, group, Algorithm.TORUS).time_s
    latency_s = estimate(CollectiveOp.ALL_REDUCE, 1, group, Algorithm.TORUS).time_s
    assert t - 2 * (p - 1) / p * size / (k * _ring_Bps(n)) <= latency_s * (1 + 1e-9)
