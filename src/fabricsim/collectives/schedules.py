"""Collective schedules as flows, step by step, for a network model (layer L4).

Each algorithm emits a list of steps; a step is a set of (src_rank, dst_rank, bytes) flows that run
together, and step i + 1 starts when step i's last flow has arrived (a barrier, as NCCL's chunk
dependencies impose between dependent steps; pipelining inside a step is not modelled). Running the
steps on a :class:`~fabricsim.network.base.NetworkModel` with ranks placed on endpoints makes the
collective's time reflect the real topology, routing and contention.

Sizes follow nccl-tests (see :mod:`fabricsim.collectives.ops`): S per rank for all-reduce,
broadcast, reduce, send-recv; the full buffer for all-gather, reduce-scatter and all-to-all.
Algorithms: ring (Patarasuk & Yuan 2009), binary tree (reduce up, broadcast down), halving-doubling
(Rabenseifner 2004, power-of-two ranks), direct all-to-all (one step, all pairs) and pairwise
all-to-all (``ring``: n - 1 shift steps), hierarchical (intra-node reduce-scatter, inter-node ring
all-reduce per local rank, intra-node all-gather).

Rings are NCCL-like multi-channel rings (NCCL ``src/graph/rings.cc``, one ring per channel): when
``ranks_per_node`` > 1 ranks share each scale-up domain (node) of a group spanning several, the
ring algorithms run ``ranks_per_node`` rings, each carrying 1/``ranks_per_node`` of every chunk;
every domain is entered by each ring at a different local rank, so the inter-domain traffic leaves
through every NIC of the domain instead of one (a single ring over 2 DGX nodes is ~8x slower on a
rail fabric). Every inter-domain hop is rail-aligned: the rank that leaves a domain has the same
local rank as the one it enters in the next domain, as NCCL keeps a channel on the same NIC index
on both nodes (``NCCL_CROSS_NIC`` unset: "to allow for a network design where each NIC on a node
connects to a different network switch (network rail)", NCCL environment-variable docs). NCCL gets
there by relaying the exit rank's data over NVLink to the GPU next to the channel's NIC (PXN);
here the intra-domain order does it instead (domain b is entered at local rank c + s_b and left at
c + s_{b+1}, s = 0, 1, 0, 1, ...; an odd domain count ends with s = 2), which moves the same bytes
through the NICs without the NVLink relay. A ring entering at c and leaving at c - 1 everywhere
would cross rails on every hop, so on a rail-optimized Clos every ring flow would climb to the spines.
:func:`bandwidth_step` is the one-step form the engine's flow
timer uses: every group of a tiling runs the collective's bus bytes (nccl-tests' bus bandwidth)
as one step on the same channels, so a step's time is the collective's bandwidth term.

In-network reduction (:func:`schedule_on`, which needs the topology) sends flows to and from
reduction switches, numbered as extra ranks after the p real ones. One step streams every edge of
the aggregation tree (:func:`fabricsim.topology.reduction.reduction_tree`) at once, as the switch
pipelines chunks; an edge starts when the first bytes of all the streams it carries can have
arrived (path latencies below it, then back down), so the time is the tree's round-trip latency
plus the slowest edge's bytes over its bandwidth. Edges are independent flows: a stream's tail is
not tied to its input's tail, so a slower upstream edge or a shorter down stream (reduce-scatter)
can end up to the path latency early; the bandwidth term is exact when every edge has one rate.

* NVLS (NCCL ``src/device/all_reduce.h``, NVLS/Simple; one NVSwitch domain): for all-reduce, GPU i
  reduces slice i with ``multimem.ld_reduce`` (the switch reads S/p from every GPU and returns the
  sum) and multicasts it with ``multimem.st``: S(1 + 1/p) bytes each way between every GPU and the
  switch. Reduce-scatter: S up, S/p down; all-gather: S/p up, S down.
* SHARP all-reduce (Graham et al., COM-HPC 2016): every tree edge carries S up (children's streams
  reduced into one) and S down (the result multicast back), so a host moves S each way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fabricsim.collectives.ops import Algorithm, CollectiveOp, bus_factor
from fabricsim.collectives.torus_schedule import torus_steps
from fabricsim.errors import FabricsimError
from fabricsim.network.base import NetworkModel, make_flows
from fabricsim.topology.graph import Topology
from fabricsim.topology.reduction import ReductionTree, expose_nodes, reduction_tree


@dataclass(frozen=True, slots=True)
class Step:
    """Flows ``src[i] -> dst[i]`` (ranks) of ``size_bytes[i]`` that run together, flow i starting
    ``start_s[i]`` after the step begins (all at once when None)."""

    src: np.ndarray
    dst: np.ndarray
    size_bytes: np.ndarray
    start_s: np.ndarray | None = None

    def same_as(self, other: Step) -> bool:
        if (self.start_s is None) != (other.start_s is None):
            return False
        names = ("src", "dst", "size_bytes") + (("start_s",) if self.start_s is not None else ())
        return all(np.array_equal(getattr(self, n), getattr(other, n)) for n in names)


@dataclass(frozen=True, slots=True)
class ScheduleRequest:
    """What to schedule: ``ranks`` of which each ``ranks_per_node`` consecutive ones share a node
    (scale-up domain): the node size of hierarchical, and the channel count of rings."""

    op: CollectiveOp
    algorithm: Algorithm
    ranks: int
    size_bytes: float
    ranks_per_node: int = 1
    torus_rings: tuple[int, ...] = ()  # ranks per torus ring (algorithm torus; collectives/torus_schedule.py)


@dataclass(frozen=True, slots=True)
class ScheduleTime:
    """Result of :func:`run_schedule`: total and per-step times (s), steps simulated vs folded."""

    time_s: float
    step_time_s: tuple[float, ...]
    simulated_steps: int
    folded_steps: int


def _step_arrays(src: np.ndarray, dst: np.ndarray, size_bytes: np.ndarray) -> Step:
    return Step(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), np.asarray(size_bytes, dtype=float))


def _step(src: np.ndarray, dst: np.ndarray, size_bytes: float) -> Step:
    return Step(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), np.full(len(src), float(size_bytes)))


def _entry_offsets(domains: int, per_domain: int) -> np.ndarray:
    """s_b of the module docstring: 0, 1, 0, 1, ... with neighbours (cyclically) different where
    possible, so that ring c enters domain b at local rank c + s_b and leaves it at c + s_{b+1}."""
    offsets = np.arange(domains) % 2
    if domains % 2 and domains > 1 and per_domain > 2:
        offsets[-1] = 2
    return offsets


def _domain_orders(domains: int, per_domain: int) -> np.ndarray:
    """Local-rank order of every channel ring in every domain, [channel, domain, pos]: enter at
    c + s_b, the other local ranks in cyclic order, leave at the next domain's entry (one rank
    further when that is the entry itself: two ranks per domain and an odd domain count)."""
    s = _entry_offsets(domains, per_domain)
    channel = np.arange(per_domain)[:, None]
    enter = (channel + s[None, :]) % per_domain  # [channel, domain]
    leave = np.roll(enter, -1, axis=1)
    leave = np.where(leave == enter, (enter + 1) % per_domain, leave)
    others = (enter[:, :, None] + np.arange(1, per_domain)) % per_domain  # [channel, domain, p - 1]
    middle = others[others != leave[:, :, None]].reshape(per_domain, domains, per_domain - 2)
    return np.concatenate([enter[:, :, None], middle, leave[:, :, None]], axis=2)


def ring_channels(groups: np.ndarray, per_domain: int) -> np.ndarray:
    """NCCL-like rings over each group (rows of rank ids), [groups, channels, ranks]: when a group
    has ``per_domain`` > 1 consecutive ranks in each of several scale-up domains, ``per_domain``
    rings, each entering a domain at a different local rank, every inter-domain hop between equal
    local ranks (rail-aligned; module docstring); otherwise one ring."""
    n = groups.shape[1]
    if per_domain <= 1 or per_domain >= n or n % per_domain:
        return groups[:, None, :]
    domains = n // per_domain
    blocks = groups.reshape(groups.shape[0], domains, per_domain)
    order = _domain_orders(domains, per_domain)  # [channel, domain, pos]
    rings = blocks[:, np.arange(domains)[None, :, None], order]  # [groups, channel, domain, pos]
    return rings.reshape(groups.shape[0], per_domain, n)


def _ring_step(groups: np.ndarray, per_domain: int, chunk: float) -> Step:
    """Every rank of every channel ring sends ``chunk`` / channels to its successor."""
    rings = ring_channels(groups, per_domain)
    return _step(rings.ravel(), np.roll(rings, -1, axis=2).ravel(), chunk / rings.shape[1])


def _ring(n: int, chunk: float, count: int, per_domain: int = 1) -> list[Step]:
    return [_ring_step(np.arange(n)[None, :], per_domain, chunk)] * count


HIERARCHICAL_ALGORITHMS = frozenset({Algorithm.NVLS, Algorithm.TREE, Algorithm.HIERARCHICAL, Algorithm.SHARP})
"""Algorithms that reduce inside a scale-up domain before crossing domains (NCCL's NVLS-tree, tree,
CollNet/SHARP): across domains each rank moves its 1/``per_domain`` share of the buffer."""


def bandwidth_step(
    op: CollectiveOp, groups: np.ndarray, size_bytes: float, per_domain: int = 1, algorithm: str = Algorithm.RING
) -> Step:
    """Every group (row of ``groups``, rank ids) running ``op`` on ``size_bytes`` as ONE step.

    Ring ops (all-reduce, all-gather, reduce-scatter, broadcast, reduce): each rank sends
    ``size x bus_factor(op, n)`` bytes (nccl-tests' bus bytes) to its successors on the
    ``per_domain`` channel rings of :func:`ring_channels`; all-to-all: ``size / n`` from every rank
    to every other (rank-major, then shift 1..n-1); send-recv: one ``size`` flow, rank 0 -> rank 1.
    With a hierarchical ``algorithm`` (:data:`HIERARCHICAL_ALGORITHMS`) over several domains of
    ``per_domain`` ranks, a ring inside every domain (``size x bus_factor(op, per_domain)``) and one
    across the domains per local rank (``size / per_domain x bus_factor(op, domains)``) run together.
    The step's time is the bandwidth term of the collective (latency steps left out).
    """
    groups = np.asarray(groups, dtype=np.int64)
    n = groups.shape[1]
    if op is CollectiveOp.SEND_RECV:
        return _step(groups[:, 0], groups[:, 1], size_bytes)
    if op is CollectiveOp.ALL_TO_ALL:
        shift = (np.arange(n)[:, None] + np.arange(1, n)[None, :]).ravel() % n
        return _step(np.repeat(groups, n - 1, axis=1).ravel(), groups[:, shift].ravel(), size_bytes / n)
    if algorithm == Algorithm.MESH:  # every rank sends its bus bytes split evenly over its n-1 peers
        shift = (np.arange(n)[:, None] + np.arange(1, n)[None, :]).ravel() % n
        per_peer = size_bytes * bus_factor(op, n) / (n - 1)
        return _step(np.repeat(groups, n - 1, axis=1).ravel(), groups[:, shift].ravel(), per_peer)
    if algorithm in HIERARCHICAL_ALGORITHMS and 1 < per_domain < n and n % per_domain == 0:
        domains = n // per_domain
        blocks = groups.reshape(-1, domains, per_domain)
        inside = _ring_step(blocks.reshape(-1, per_domain), 1, size_bytes * bus_factor(op, per_domain))
        across = _ring_step(blocks.transpose(0, 2, 1).reshape(-1, domains), 1,
                            size_bytes / per_domain * bus_factor(op, domains))
        return Step(*(np.concatenate([getattr(inside, k), getattr(across, k)]) for k in ("src", "dst", "size_bytes")))
    return _ring_step(groups, per_domain, size_bytes * bus_factor(op, n))


def _tree(n: int, size: float, up: bool, down: bool) -> list[Step]:
    ranks = np.arange(1, n)
    depth = np.floor(np.log2(ranks + 1)).astype(int)
    parent = (ranks - 1) // 2
    levels = range(int(depth.max(initial=0)), 0, -1)
    reduce_steps = [_step(ranks[depth == d], parent[depth == d], size) for d in levels]
    bcast_steps = [_step(parent[depth == d], ranks[depth == d], size) for d in reversed(levels)]
    return (reduce_steps if up else []) + (bcast_steps if down else [])


def _halving_doubling(n: int, size: float) -> list[Step]:
    if n & (n - 1):
        raise FabricsimError("algorithm", f"halving-doubling needs a power-of-two rank count, got {n}", "use ring")
    ranks = np.arange(n)
    rounds = int(np.log2(n)) if n > 1 else 0
    halving = [_step(ranks, ranks ^ (n >> (k + 1)), size / 2 ** (k + 1)) for k in range(rounds)]
    return halving + halving[::-1]


def _hierarchical(n: int, size: float, per_node: int) -> list[Step]:
    if per_node < 1 or n % per_node:
        raise FabricsimError("ranks_per_node", f"{n} ranks are not whole nodes of {per_node}")
    nodes = n // per_node
    ranks = np.arange(n)
    local, node = ranks % per_node, ranks // per_node
    intra = _step(ranks, node * per_node + (local + 1) % per_node, size / per_node)
    inter = _step(ranks, ((node + 1) % nodes) * per_node + local, size / n)
    intra_steps = [intra] * (per_node - 1) if per_node > 1 else []
    inter_steps = [inter] * (2 * (nodes - 1)) if nodes > 1 else []
    return intra_steps + inter_steps + intra_steps


def _all_to_all(n: int, size: float, direct: bool) -> list[Step]:
    chunk = size / n
    if direct:
        src, dst = np.divmod(np.arange(n * n), n)
        keep = src != dst
        return [_step(src[keep], dst[keep], chunk)]
    ranks = np.arange(n)
    return [_step(ranks, (ranks + k) % n, chunk) for k in range(1, n)]


def build_schedule(request: ScheduleRequest) -> list[Step]:
    """The steps of ``request.op`` by ``request.algorithm``; unsupported pairs raise FabricsimError."""
    n, size, op, algo = request.ranks, float(request.size_bytes), request.op, request.algorithm
    per_node = request.ranks_per_node
    if n < 1:
        raise FabricsimError("ranks", f"must be >= 1, got {n}")
    if n == 1:
        return []
    table = {
        (CollectiveOp.ALL_REDUCE, Algorithm.RING): lambda: _ring(n, size / n, 2 * (n - 1), per_node),
        (CollectiveOp.ALL_GATHER, Algorithm.RING): lambda: _ring(n, size / n, n - 1, per_node),
        (CollectiveOp.REDUCE_SCATTER, Algorithm.RING): lambda: _ring(n, size / n, n - 1, per_node),
        (CollectiveOp.ALL_REDUCE, Algorithm.TREE): lambda: _tree(n, size, True, True),
        (CollectiveOp.REDUCE, Algorithm.TREE): lambda: _tree(n, size, True, False),
        (CollectiveOp.BROADCAST, Algorithm.TREE): lambda: _tree(n, size, False, True),
        (CollectiveOp.ALL_REDUCE, Algorithm.HALVING_DOUBLING): lambda: _halving_doubling(n, size),
        (CollectiveOp.ALL_REDUCE, Algorithm.HIERARCHICAL): lambda: _hierarchical(n, size, request.ranks_per_node),
        (CollectiveOp.ALL_TO_ALL, Algorithm.DIRECT): lambda: _all_to_all(n, size, True),
        (CollectiveOp.ALL_TO_ALL, Algorithm.RING): lambda: _all_to_all(n, size, False),
        (CollectiveOp.SEND_RECV, Algorithm.DIRECT): lambda: [_step([0], [1], size)],
        # mesh (collectives/mesh.py): S/n to every peer at once; all-reduce = reduce-scatter + all-gather
        (CollectiveOp.ALL_TO_ALL, Algorithm.MESH): lambda: _all_to_all(n, size, True),
        (CollectiveOp.ALL_GATHER, Algorithm.MESH): lambda: _all_to_all(n, size, True),
        (CollectiveOp.REDUCE_SCATTER, Algorithm.MESH): lambda: _all_to_all(n, size, True),
        (CollectiveOp.ALL_REDUCE, Algorithm.MESH): lambda: _all_to_all(n, size, True) * 2,
    }
    if algo is Algorithm.TORUS and request.torus_rings and math.prod(request.torus_rings) == n:
        return [_step_arrays(*arrays) for arrays in torus_steps(op, request.torus_rings, size)]
    if (op, algo) in _IN_NETWORK:
        raise FabricsimError(
            "algorithm",
            f"no flow schedule for {op.value} with {algo.value} without a topology",
            "use schedule_on(request, topology, placement)",
        )
    if (op, algo) not in table:
        known = ", ".join(f"{o.value}/{a.value}" for o, a in table)
        raise FabricsimError("algorithm", f"no flow schedule for {op.value} with {algo.value}", f"known: {known}")
    return table[(op, algo)]()


def run_schedule(steps: list[Step], network: NetworkModel, placement: np.ndarray) -> ScheduleTime:
    """Run ``steps`` one after another on ``network``, rank r on endpoint ``placement[r]``.

    Folding: a step equal to the previous one (same src, dst and bytes arrays) is not simulated
    again; its time is the previous step's. This is exact: every step starts on an idle network
    (barrier), and the network models are deterministic functions of the flow set (ECMP hashes
    src, dst and label, not the step), so identical flow sets give identical times.
    """
    placement = np.asarray(placement, dtype=np.int64)
    times: list[float] = []
    simulated = 0
    for i, step in enumerate(steps):
        if i and step.same_as(steps[i - 1]):
            times.append(times[-1])
            continue
        start = 0.0 if step.start_s is None else step.start_s
        flows = make_flows(placement[step.src], placement[step.dst], step.size_bytes, start)
        times.append(network.run(flows).completion_time_s)
        simulated += 1
    return ScheduleTime(float(sum(times)), tuple(times), simulated, len(steps) - simulated)


_IN_NETWORK = {
    (CollectiveOp.ALL_REDUCE, Algorithm.NVLS),
    (CollectiveOp.REDUCE_SCATTER, Algorithm.NVLS),
    (CollectiveOp.ALL_GATHER, Algorithm.NVLS),
    (CollectiveOp.ALL_REDUCE, Algorithm.SHARP),
}


@dataclass(frozen=True, slots=True)
class PlacedSchedule:
    """Steps to run with :func:`run_schedule` on a network built over ``topology``: schedule rank
    r runs on endpoint ``placement[r]`` (the p ranks, then any reduction switches as extra ranks)."""

    steps: tuple[Step, ...]
    topology: Topology
    placement: np.ndarray


def schedule_on(request: ScheduleRequest, topology: Topology, placement: np.ndarray) -> PlacedSchedule:
    """The steps of ``request`` with its ranks on endpoints ``placement`` of ``topology``.

    NVLS and SHARP use the topology's reduction switches (module docstring): the returned topology
    lists the tree's switches as extra endpoints. Other algorithms are :func:`build_schedule`'s, on
    ``topology`` unchanged. Raises FabricsimError (field ``algorithm``) when no reduction switch
    serves the ranks, or NVLS is asked across more than one switch.
    """
    placement = np.asarray(placement, dtype=np.int64)
    if placement.size != request.ranks:
        raise FabricsimError("placement", f"{placement.size} endpoints for {request.ranks} ranks")
    key = (request.op, request.algorithm)
    if key not in _IN_NETWORK or request.ranks == 1:
        return PlacedSchedule(tuple(build_schedule(request)), topology, placement)
    if placement.min() < 0 or placement.max() >= topology.hosts:
        raise FabricsimError("placement", f"endpoint ids must be in [0, {topology.hosts})")
    tree = reduction_tree(topology, topology.endpoints[placement])
    exposed, where = expose_nodes(topology, tree.nodes)
    up, down = _edge_bytes(request, tree)
    return PlacedSchedule((_tree_step(tree, up, down),), exposed, where)


def _edge_bytes(request: ScheduleRequest, tree: ReductionTree) -> tuple[float, float]:
    """Bytes each tree edge carries up and down (module docstring)."""
    p, size = request.ranks, float(request.size_bytes)
    if request.algorithm is Algorithm.SHARP:
        return size, size
    if np.any(tree.depth[:p] != 1) or tree.nodes.size != p + 1:
        raise FabricsimError(
            "algorithm",
            "NVLS needs every rank cabled to one reduction-capable switch (one NVSwitch domain)",
            "use sharp or ring across domains",
        )
    return {
        CollectiveOp.ALL_REDUCE: (size * (1 + 1 / p), size * (1 + 1 / p)),
        CollectiveOp.REDUCE_SCATTER: (size, size / p),
        CollectiveOp.ALL_GATHER: (size / p, size),
    }[request.op]


def _tree_step(tree: ReductionTree, up_bytes: float, down_bytes: float) -> Step:
    """Every tree edge streaming at once: child -> parent when all the child's inputs can have
    arrived, parent -> child when the root's result can have come down to the parent."""
    order = np.argsort(-tree.depth, kind="stable")  # leaves first
    ready = np.zeros(tree.nodes.size)
    for i in order:
        if tree.parent[i] >= 0:
            ready[tree.parent[i]] = max(ready[tree.parent[i]], ready[i] + tree.up_latency_s[i])
    back = ready.copy()
    for i in order[::-1]:  # root first
        if tree.parent[i] >= 0:
            back[i] = back[tree.parent[i]] + tree.down_latency_s[i]
    child = np.flatnonzero(tree.parent >= 0)
    parent = tree.parent[child]
    src, dst = np.concatenate([child, parent]), np.concatenate([parent, child])
    size = np.concatenate([np.full(child.size, up_bytes), np.full(child.size, down_bytes)])
    return Step(src, dst, size, np.concatenate([ready[child], back[parent]]))
