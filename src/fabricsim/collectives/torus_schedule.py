"""Flow schedule of the torus collectives (layer L4): the steps of :mod:`fabricsim.collectives.torus`
as rank-to-rank flows, for the flow and packet fidelities.

Ranks fill the rings in order (rank r at coordinate (r // prod(n_<i)) % n_i on ring i, x fastest,
as GPUs sit in a torus domain). Reduce-scatter: k phases; in phase t, shard j (S/k of the data) runs
a bidirectional ring reduce-scatter on ring (j + t) % k over the block the earlier phases left, all
shards at once: n - 1 steps, each rank sending half its chunk to each neighbour on that ring (one
neighbour on a ring of 2). All-gather: the same steps in reverse order; all-reduce: both. The network
routes each flow over the torus, so a ring's steps meet its links and the phases overlap as in the
closed form. Returned as (src, dst, bytes) arrays per step (collectives/schedules.py wraps them).
"""

from __future__ import annotations

import math

import numpy as np

from fabricsim.collectives.ops import CollectiveOp

FlowArrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def _neighbours(sizes: tuple[int, ...], ring: int, delta: int) -> np.ndarray:
    """Each rank's neighbour ``delta`` along ring ``ring``."""
    strides = np.cumprod((1, *sizes[:-1]))
    ranks = np.arange(math.prod(sizes))
    coords = (ranks[:, None] // strides) % np.asarray(sizes)
    coords[:, ring] = (coords[:, ring] + delta) % sizes[ring]
    return coords @ strides


def _reduce_scatter(sizes: tuple[int, ...], size_bytes: float) -> list[FlowArrays]:
    k, ranks = len(sizes), np.arange(math.prod(sizes))
    steps: list[FlowArrays] = []
    for phase in range(k):
        shards = [((j + phase) % k, size_bytes / k / math.prod(sizes[(j + u) % k] for u in range(phase)))
                  for j in range(k)]  # fmt: skip
        for step in range(max(sizes[ring] - 1 for ring, _ in shards)):
            src, dst, sent = [], [], []
            for ring, block in shards:
                n = sizes[ring]
                if step >= n - 1:
                    continue
                directions = (1, -1) if n > 2 else (1,)
                for delta in directions:
                    src.append(ranks)
                    dst.append(_neighbours(sizes, ring, delta))
                    sent.append(np.full(ranks.size, block / n / len(directions)))
            steps.append((np.concatenate(src), np.concatenate(dst), np.concatenate(sent)))
    return steps


def torus_steps(op: CollectiveOp, sizes: tuple[int, ...], size_bytes: float) -> list[FlowArrays]:
    """The steps of ``op`` on rings of ``sizes`` ranks (module docstring). All-to-all: every rank
    sends S/p to every other at once, routed over the torus by the network."""
    if op is CollectiveOp.ALL_TO_ALL:
        p = math.prod(sizes)
        src, dst = np.divmod(np.arange(p * p), p)
        keep = src != dst
        return [(src[keep], dst[keep], np.full(int(keep.sum()), size_bytes / p))]
    steps = _reduce_scatter(sizes, size_bytes)
    if op is CollectiveOp.REDUCE_SCATTER:
        return steps
    if op is CollectiveOp.ALL_GATHER:
        return steps[::-1]
    return steps + steps[::-1]


def torus_bandwidth_step(op: CollectiveOp, groups: np.ndarray, sizes: tuple[int, ...], size_bytes: float) -> FlowArrays:
    """Every group (row of ``groups``: endpoint or GPU ids in rank order) running the torus
    schedule of ``op`` (:func:`torus_steps`) as ONE step: each rank-to-neighbour flow carries the
    bytes of all its steps, for the fabric-in-the-loop engine, which times a collective's bandwidth
    term as one step (:func:`fabricsim.collectives.schedules.bandwidth_step`). A link then carries
    the bytes the phases put on it in turn; with k equal rings the rotated shards load every ring
    alike, so the one step takes the phases' summed time; with unequal rings it can be shorter
    (the phases' slowest shard is not waited for) but never below the injection bound."""
    groups = np.asarray(groups, dtype=np.int64)
    steps = torus_steps(op, sizes, size_bytes)
    src = np.concatenate([s for s, _, _ in steps])
    dst = np.concatenate([d for _, d, _ in steps])
    sent = np.concatenate([b for _, _, b in steps])
    p = math.prod(sizes)
    pair, index = np.unique(src * p + dst, return_inverse=True)
    total = np.bincount(index, weights=sent, minlength=pair.size)
    a, b = np.divmod(pair, p)
    return groups[:, a].ravel(), groups[:, b].ravel(), np.tile(total, groups.shape[0])
