"""The torus schedule's one-step form for the fabric-in-the-loop engine."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.collectives.ops import CollectiveOp
from fabricsim.collectives.torus_schedule import torus_bandwidth_step, torus_steps


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([2, 3, 4, 8]), min_size=1, max_size=3).map(tuple),
    size_bytes=st.floats(1e3, 1e10),
    op=st.sampled_from([CollectiveOp.ALL_REDUCE, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_GATHER]),
)
def test_one_step_carries_every_steps_bytes_between_ring_neighbours(sizes, size_bytes, op):
    p = math.prod(sizes)
    groups = np.arange(2 * p).reshape(2, p)[:, ::-1]  # two groups, ranks in reverse endpoint order
    src, dst, sent = torus_bandwidth_step(op, groups, sizes, size_bytes)
    total = sum(float(b.sum()) for _, _, b in torus_steps(op, sizes, size_bytes))
    assert sent.sum() == pytest.approx(2 * total)
    assert np.array_equal(groups[0] // p, groups[0] * 0) and set(src[: src.size // 2]) <= set(groups[0])
    # every rank sends (phases x (p-1)/p x S) bytes in all: the reduce-scatter's data volume
    phases = 2 if op is CollectiveOp.ALL_REDUCE else 1
    per_rank = np.bincount(src, weights=sent, minlength=2 * p)
    assert per_rank == pytest.approx(np.full(2 * p, phases * (p - 1) / p * size_bytes))
    # and only to ring neighbours (one coordinate differs by +-1 mod n)
    strides = np.cumprod((1, *sizes[:-1]))
    a = (groups[0].size - 1 - src[: src.size // 2])[:, None] // strides % np.asarray(sizes)
    b = (groups[0].size - 1 - dst[: dst.size // 2])[:, None] // strides % np.asarray(sizes)
    moved = (a != b).sum(axis=1)
    assert (moved == 1).all()
