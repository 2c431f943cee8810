"""Collectives on a torus scale-up domain (no switch): Google TPU ICI, AWS Trainium2 NeuronLink
(layer L4).

A group inside one torus domain forms rings along the dimensions it fills
(:func:`~fabricsim.collectives.placement.torus_rings`): ring i has n_i ranks and B_i bytes/s per
direction around it (two links' worth on a wrapped dimension, where the ring runs both ways).

* reduce-scatter: a ring reduce-scatter along each dimension in turn, each on the block the previous
  one left (S, then S/n_1, S/(n_1 n_2), ...): the multi-dimensional ring all-reduce TPU pods run
  (Kumar et al., "Exploring the limits of concurrency in ML training on Google TPUs", MLSys 2021,
  describe the 2-D form on TPU v3 pods). The data is cut into k shards (k rings) and shard j starts
  on dimension j and rotates, so every dimension's links carry a shard in every phase (fabricsim's
  scheduling of the same rings; without it k-1 dimensions would idle). Phase t lasts the slowest
  shard's ring: max_j (n-1)/n x S/(k x prod(earlier n)) / B over the ring shard j is on.
* all-gather: the same phases in reverse; all-reduce = reduce-scatter + all-gather.
* all-to-all: every rank sends S/p to each of the p ranks, routed along the dimensions. It is
  bisection-limited: cutting ring i in half leaves (p / n_i) x B_i bytes/s per direction across
  the cut, which p S / 4 bytes must cross, so time >= S n_i / (4 B_i) for every i; and no rank
  injects faster than the sum of its rings' bandwidths: time >= (p-1)/p S / sum(B_i). The larger
  bound is the time (the traffic is uniform, so dimension-order routing meets the bisection bound).

Bandwidths are nominal (no protocol derating). For k equal dimensions the rotated shards keep every
link busy and all-reduce meets the injection bound 2(p-1)/p S / sum(B_i) exactly; for one ring
(one dimension) that is 2(p-1)/p S over the ring's bidirectional bandwidth
(tests/properties/test_torus_properties.py). alpha: NCCL's Simple base latency plus one hop of the
scale-up tier per ring step (the constants the ring and the mesh use; fabricsim has no TPU or Neuron
runtime latency figure). Scope: inside one scale-up domain; across domains the other algorithms run.

:func:`lattice_all_to_all_s_per_byte` is the all-to-all bound of a whole torus, regular or
twisted (:mod:`fabricsim.topology.ocs`), from its channel loads (Dally and Towles, "Principles and
Practices of Interconnection Networks", 2004, ch. 3: the throughput of uniform traffic is set by
the most loaded channel): every rank's S/p to each rank split evenly over all shortest paths. A
torus or twisted torus is a Cayley graph (the lattice graphs of Camarero, Martinez and Beivide,
IEEE TPDS 2015), so every link of one dimension and direction carries the same load, the sum of
one source's loads over those links (one breadth-first pass, Brandes' path counting). On a regular
torus this equals the bisection bound above (tests/collectives/test_torus_lattice.py).
"""

from __future__ import annotations

import math
from functools import lru_cache

from fabricsim.collectives.algorithms import hw_latency
from fabricsim.collectives.candidate import Candidate, Shape
from fabricsim.collectives.nccl import NcclConstants
from fabricsim.collectives.ops import SWITCHLESS_OPS, Algorithm, CollectiveOp, Protocol
from fabricsim.collectives.placement import Group


def unavailable_reason(op: CollectiveOp, group: Group) -> str | None:
    """Why the torus algorithm cannot run ``op`` on ``group``, or None when it can."""
    if op not in SWITCHLESS_OPS:
        return "torus implements all-reduce, all-gather, reduce-scatter and all-to-all only"
    if not group.torus:
        return "the scale-up domain is not a torus"
    if group.domains > 1:
        return "the group crosses the scale-out network; torus runs inside one scale-up domain"
    if not group.torus_rings:
        return "the group does not fill whole torus dimensions (a stride or size splits one)"
    return None


def routed_on_torus(group: Group) -> bool:
    """Whether ``group`` lies inside one torus domain on whole dimensions: its exchanges cross the
    torus's links, so a direct all-to-all is the torus one (the switch-less direct form would ignore
    the bisection)."""
    return group.torus and group.domains == 1 and bool(group.torus_rings)


def reduce_scatter_s_per_byte(rings: tuple[tuple[int, float], ...]) -> float:
    """Seconds per byte of S of the rotated multi-shard reduce-scatter (module docstring)."""
    k = len(rings)
    total = 0.0
    for phase in range(k):
        slowest = 0.0
        for shard in range(k):
            earlier = math.prod(rings[(shard + u) % k][0] for u in range(phase))
            n, ring_Bps = rings[(shard + phase) % k]
            slowest = max(slowest, (n - 1) / n / (k * earlier * ring_Bps))
        total += slowest
    return total


def all_to_all_s_per_byte(rings: tuple[tuple[int, float], ...]) -> float:
    """Seconds per byte of S (each rank's send total) of a torus all-to-all: the larger of the
    bisection bound max_i n_i / (4 B_i) and the injection bound (p-1)/p / sum(B_i)."""
    p = math.prod(n for n, _ in rings)
    bisection = max(n / (4.0 * ring_Bps) for n, ring_Bps in rings)
    return max(bisection, (p - 1) / p / sum(b for _, b in rings))


@lru_cache(maxsize=256)
def lattice_all_to_all_s_per_byte(dims: tuple[int, ...], twisted: bool, link_Bps: tuple[float, ...]) -> float:
    """Seconds per byte of S (each rank's send total) of an all-to-all over the whole torus of
    shape ``dims`` (x fastest), twisted or not, ``link_Bps[d]`` one link of dimension d per
    direction: the most loaded link's bytes over its bandwidth (module docstring). O(p x dims)."""
    import numpy as np  # here, not at the top: an analytic train (no lattice) stays numpy-free

    from fabricsim.topology.ocs import slice_pairs

    a, b = slice_pairs(dims, twisted)
    p, k = math.prod(dims), len(dims)
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    kind = np.concatenate([2 * np.repeat(np.arange(k), p), 2 * np.repeat(np.arange(k), p) + 1])  # (dim, +/-)
    dist = np.full(p, -1)
    dist[0] = 0
    paths = np.zeros(p)
    paths[0] = 1.0
    level = 0
    while True:  # breadth-first from rank 0, counting shortest paths
        out = dist[src] == level
        fresh = out & (dist[dst] < 0)
        if not fresh.any():
            break
        dist[dst[fresh]] = level + 1
        tree = out & (dist[dst] == level + 1)
        paths += np.bincount(dst[tree], weights=paths[src[tree]], minlength=p)
        level += 1
    below, per_kind = np.zeros(p), np.zeros(2 * k)
    for depth in range(level, 0, -1):  # back up: a link's share of the destinations behind it
        tree = (dist[src] == depth - 1) & (dist[dst] == depth)
        share = paths[src[tree]] / paths[dst[tree]] * (1.0 + below[dst[tree]])
        below += np.bincount(src[tree], weights=share, minlength=p)
        per_kind += np.bincount(kind[tree], weights=share, minlength=2 * k)
    return float(max(per_kind[c] / (p * link_Bps[c // 2]) for c in range(2 * k)))


def step_latency_s(group: Group, nccl: NcclConstants) -> float:
    """One ring step's latency (s) in a torus group: NCCL's Simple base latency plus one scale-up hop."""
    base_s = nccl.base_latency_s["ring"][Protocol.SIMPLE.value]
    return base_s + hw_latency(nccl, group.intra_hw, "ring", Protocol.SIMPLE)


def torus(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """The torus form of ``op`` (module docstring) as one Simple-protocol candidate."""
    rings = group.torus_rings
    step_s = step_latency_s(group, nccl)
    if op is CollectiveOp.ALL_TO_ALL:  # one step per hop of the longest dimension-order route
        hops = sum(n // 2 for n, _ in rings)
        return (Candidate(Algorithm.TORUS, Protocol.SIMPLE, Shape.LINEAR, hops * step_s, all_to_all_s_per_byte(rings)),)
    phases = 2 if op is CollectiveOp.ALL_REDUCE else 1
    steps = sum(n - 1 for n, _ in rings)
    s_per_byte = phases * reduce_scatter_s_per_byte(rings)
    return (Candidate(Algorithm.TORUS, Protocol.SIMPLE, Shape.LINEAR, phases * steps * step_s, s_per_byte),)
