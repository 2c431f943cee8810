"""The fabric in the loop: every collective of a step runs as flows on the placed fabric, timed
with whatever else is in flight at the same moment (layer L6).

One engine for ``train``, ``infer`` and ``cluster`` (several jobs on one fabric). A job is its op
graph (:mod:`fabricsim.workload.graph`), the endpoint each of its GPU ranks is placed on, and
Megatron-Core's rank order (TP innermost, then CP, EP/DP, PP outermost), so pipeline stage ``s``
of a job of ``G`` GPUs and ``p`` stages owns ranks ``[sG/p, (s+1)G/p)``. A collective op of stage
``s`` (an *item*: job, stage, payload) is the payload's one-step flows
(:func:`fabricsim.collectives.schedules.bandwidth_step`: NCCL-like channel rings, all-to-all pairs,
p2p; inside a torus domain the per-dimension bidirectional rings of
:func:`fabricsim.collectives.torus_schedule.torus_bandwidth_step` when the analytic model chose
the torus or ring algorithm) of every group of its shape inside that stage (the folded
data-parallel copies and tensor-parallel members run in lock-step), pipeline sends going to the
next stage.

Timing is a fixed point over the event-driven executor (:func:`fabricsim.engine.simulate.execute`):

1. every item is timed alone on the fabric by the network model of the chosen fidelity (flow:
   max-min fair flows; packet: queues, PFC/credits, ECN, congestion control), with the background
   tenant's flows if any, its routes found once; an op takes ``max(nominal, repeat x t_alone)``
   (the network adds contention, never removes the analytic model's latency and protocol terms;
   see :func:`fabricsim.engine.simulate.resolve_durations`);
2. the graphs run; every comm op's interval is cut where the set of other items in flight changes
   (items of any job, jobs repeating with their own step period). A *mix* is the item plus the
   items in flight with it that cross at least one of its links. Within a mix an item is slowed by
   the links it shares (:meth:`ItemTimer.time_mix`: its bytes at the max-min fair per-flow share of
   each link while all of them are there; the slowdown is how far its bottleneck moves); each mix is
   computed once. The op's slowdown is the time-weighted mean over
   its segments of ``t_mix / t_alone``, its duration ``max(nominal, repeat x t_alone x slowdown)``;
3. step 2 repeats with the new timelines until no duration moves by more than ``TOLERANCE``
   (relative) or after ``MAX_ROUNDS`` rounds.

What is simulated on the network is each collective on the real routes with the background; what
concurrent collectives do to each other is the per-link fair-share model of step 2 on those same
routes, not a joint simulation (a joint run per distinct mix costs thousands of network runs per
step at 10^3 GPUs, the link model microseconds each).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from fabricsim.collectives import parse_op
from fabricsim.collectives.ops import SWITCHLESS_OPS
from fabricsim.collectives.schedules import bandwidth_step
from fabricsim.collectives.torus_schedule import torus_bandwidth_step
from fabricsim.engine.simulate import SimulationResult, Timeline, comm_summary, execute
from fabricsim.network.base import FlowSet, NetworkModel, NetworkResult
from fabricsim.specs import SystemSpec
from fabricsim.topology.graph import Topology
from fabricsim.topology.routing import Routes
from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream

TOLERANCE = 1e-3  # relative change of every op duration at which the fixed point stops (numerical)
MAX_ROUNDS = 4  # rounds of step 2 at most; each re-times only the mixes not seen before


@dataclass(frozen=True, slots=True)
class Fabric:
    """One fabric: its topology (endpoints = GPUs), the network model that times flows on it
    (flow or packet fidelity, with its routing), the GPUs per scale-up domain (for NCCL-like
    channel rings) and an optional background tenant (flows with ``max_rate_Bps``)."""

    topology: Topology
    network: NetworkModel
    domain_gpus: int
    background: FlowSet | None = None


@dataclass(frozen=True, slots=True)
class FabricJob:
    """A job on the fabric: its step graph, the endpoint of each GPU rank, how many pipeline stages
    its rank classes stand for (one rank class per stage, per simulated replica), and optionally the
    nominal time of one call of each payload (default: the op's duration / repeat). A traffic tenant
    carries its own ``flows``; ``headline`` reads the job's time from its timeline (an inference
    job's decode step, TPOT; default the makespan: a training step, a tenant's completion)."""

    name: str
    graph: OpGraph
    host_of_gpu: np.ndarray
    stages: int
    call_s: dict[CommPayload, float] | None = None
    flows: FlowSet | None = None  # a traffic tenant: every payload of the job is these flows (endpoint ids)
    system: SystemSpec | None = None  # to run each collective with the algorithm the analytic model chose
    headline: Callable[[Timeline], float] | None = None  # the job's time from its timeline (default makespan)

    @property
    def gpus(self) -> int:
        return int(self.host_of_gpu.size)


Item = tuple[int, int, CommPayload]  # (job index, pipeline stage, payload)


@dataclass
class FabricRun:
    """What the fabric loop did: the final per-op durations of each job, the mixes it timed, and
    per item its flows (for the bytes-per-tier report)."""

    durations: list[np.ndarray]
    timelines: list[Timeline]
    alone_s: dict[Item, float] = field(default_factory=dict)
    mixes: dict[frozenset[Item], dict[Item, float]] = field(default_factory=dict)
    flows: dict[Item, FlowSet] = field(default_factory=dict)
    rounds: int = 0
    network_runs: int = 0


def tiled_groups(gpus: int, ranks: int, stride: int) -> np.ndarray:
    """GPU ids of every group of ``ranks`` at ``stride`` tiling ``gpus`` GPUs: array [groups, ranks]
    (Megatron's rank order makes the TP, CP, DP and EP groups such tilings). GPU g belongs to the
    group starting at (g // (ranks·stride))·ranks·stride + g mod stride; a ragged tail forms no group."""
    block = ranks * stride
    base = np.arange(gpus - gpus % block, dtype=np.int64).reshape(-1, ranks, stride)  # [blocks, rank, offset]
    return base.transpose(0, 2, 1).reshape(-1, ranks)


def stage_groups(gpus: int, stages: int, stage: int, payload: CommPayload) -> np.ndarray:
    """GPU ranks [groups, ranks] of every group of ``payload`` inside pipeline stage ``stage`` (its
    sends to the next stage, the last stage's to the one before)."""
    block = gpus // stages
    low = stage * block
    n, stride = payload.group_gpus, payload.group_stride
    if n < 2 or (n * stride > gpus and payload.collective != "send-recv"):
        return np.zeros((0, max(n, 2)), dtype=np.int64)
    if payload.collective == "send-recv":
        src = np.arange(low, low + block, dtype=np.int64)
        if stride < block:  # inside the stage (a context-parallel ring): to the rank ``stride`` on
            return np.stack([src, low + (src - low + stride) % block], axis=1)
        dst = src + stride if stage + 1 < stages else src - stride
        keep = (dst >= 0) & (dst < gpus)
        return np.stack([src[keep], dst[keep]], axis=1)
    groups = tiled_groups(gpus, n, stride)
    return groups[(groups[:, 0] >= low) & (groups[:, 0] < low + block)]


def chosen_algorithm(system: SystemSpec | None, payload: CommPayload) -> str:
    """The algorithm the analytic collective model picks for ``payload`` (NCCL-like choice on the
    group's default placement); ring without a system."""
    if system is None or payload.group_gpus < 2:
        return "ring"
    from fabricsim.collectives.model import estimate
    from fabricsim.collectives.ops import Algorithm
    from fabricsim.collectives.placement import place_group

    group = place_group(system, payload.group_gpus, payload.group_stride)
    return str(estimate(parse_op(payload.collective), payload.size_bytes, group, Algorithm.AUTO).algorithm)


def torus_ring_sizes(system: SystemSpec | None, payload: CommPayload) -> tuple[int, ...]:
    """Ranks per torus ring of ``payload``'s group when it lies in one torus domain on whole
    dimensions (:func:`fabricsim.collectives.torus.routed_on_torus`), rank order x fastest as
    the domain numbers its GPUs; () otherwise."""
    if system is None or payload.group_gpus < 2 or not system.scale_up.torus:
        return ()
    from fabricsim.collectives.placement import place_group
    from fabricsim.collectives.torus import routed_on_torus

    group = place_group(system, payload.group_gpus, payload.group_stride)
    return tuple(n for n, _ in group.torus_rings) if routed_on_torus(group) else ()


def item_flows(job: FabricJob, stage: int, payload: CommPayload, domain_gpus: int) -> FlowSet:
    """The flows of one item on the job's placed endpoints (see the module docstring), by the
    algorithm the analytic model chose (a hierarchical one reduces inside the domains first; the
    torus one, or a ring, inside one torus domain on whole dimensions runs the per-dimension
    bidirectional rings)."""
    groups = job.host_of_gpu[stage_groups(job.gpus, job.stages, stage, payload)]
    if groups.size == 0:
        return FlowSet(*(np.zeros(0, dtype=t) for t in (np.int64, np.int64, float, float, np.int64)))
    domain = groups // domain_gpus
    per_domain = int(np.count_nonzero(domain[0] == domain[0, 0]))
    algorithm = chosen_algorithm(job.system, payload)
    op = parse_op(payload.collective)
    # a ring on a torus group is costed by the analytic model at the rings' bandwidth both ways
    # round (collectives/placement.py: scale_up_Bps = the rings' sum), so it runs as the torus rings
    rings = torus_ring_sizes(job.system, payload) if algorithm in ("torus", "ring") and op in SWITCHLESS_OPS else ()
    if rings and int(np.prod(rings)) == groups.shape[1]:
        src, dst, sent = torus_bandwidth_step(op, groups, rings, payload.size_bytes)
    else:
        step = bandwidth_step(op, groups, payload.size_bytes, per_domain, algorithm)
        src, dst, sent = step.src, step.dst, step.size_bytes
    label = np.zeros(src.size, dtype=np.int64)
    return FlowSet(src, dst, np.asarray(sent, dtype=float), np.zeros(src.size), label)


def _concat(parts: Sequence[FlowSet]) -> FlowSet:
    fields = ("src", "dst", "size_bytes", "start_s", "label")
    joined = [np.concatenate([getattr(p, name) for p in parts]) for name in fields]
    rates = [p.max_rate_Bps if p.max_rate_Bps is not None else np.full(p.count, np.inf) for p in parts]
    capped = any(p.max_rate_Bps is not None for p in parts)
    return FlowSet(*joined, max_rate_Bps=np.concatenate(rates) if capped else None)


class ItemTimer:
    """Times items alone on the fabric's network model (one run each) and in mixes by the links they
    share (see the module docstring)."""

    def __init__(self, jobs: Sequence[FabricJob], fabric: Fabric, run: FabricRun) -> None:
        self.jobs, self.fabric, self.run = jobs, fabric, run
        self.capacity = fabric.topology.capacity_Bps
        self.loads: dict[Item, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.routed: dict[Item | None, Routes] = {}
        self.shared: dict[tuple[Item, Item], bool] = {}

    def flows(self, item: Item) -> FlowSet:
        if item not in self.run.flows:
            job, stage, payload = item
            fixed = self.jobs[job].flows
            built = fixed if fixed is not None else item_flows(self.jobs[job], stage, payload, self.fabric.domain_gpus)
            self.run.flows[item] = built
        return self.run.flows[item]

    def routes(self, item: Item | None) -> Routes:
        """The routes of an item's flows (None: the background's), found once per item."""
        if item not in self.routed:
            flows = self.flows(item) if item is not None else self.fabric.background
            self.routed[item] = self.fabric.network.routes(flows)  # type: ignore[attr-defined, arg-type]
        return self.routed[item]

    def load(self, item: Item) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The links the item's flows cross, and per link its bytes and its flows (fractions when sprayed)."""
        if item not in self.loads:
            flows = self.flows(item)
            if not flows.count:
                empty = np.zeros(0)
                self.loads[item] = (empty.astype(np.int64), empty, empty)
            else:
                incidence = self.routes(item).incidence.tocsr()
                per_link_bytes = np.asarray(incidence @ flows.size_bytes).ravel()
                per_link_flows = np.asarray(incidence.sum(axis=1)).ravel()
                used = np.flatnonzero(per_link_flows > 0)
                self.loads[item] = (used, per_link_bytes[used], per_link_flows[used])
        return self.loads[item]

    def share_links(self, a: Item, b: Item) -> bool:
        key = (a, b) if _item_key(a) <= _item_key(b) else (b, a)
        if key not in self.shared:
            self.shared[key] = bool(np.intersect1d(self.load(a)[0], self.load(b)[0], assume_unique=True).size)
        return self.shared[key]

    def alone(self, item: Item) -> float:
        """Completion time (s) of the item alone on the fabric (with the background tenant): one run
        of the network model."""
        if item not in self.run.alone_s:
            flows = self.flows(item)
            time_s = 0.0
            if flows.count:
                keys: list[Item | None] = [item] if self.fabric.background is None else [item, None]
                joined = _concat([self.flows(k) if k is not None else self.fabric.background for k in keys])
                routes = [self.routes(k) for k in keys]
                incidence = sp.hstack([r.incidence for r in routes]).tocsr()
                routed = Routes(incidence, np.concatenate([r.latency_s for r in routes]))
                result: NetworkResult = self.fabric.network.run_routed(joined, routed)  # type: ignore[attr-defined]
                self.run.network_runs += 1
                time_s = float(result.finish_s[: flows.count].max())
            self.run.alone_s[item] = time_s
        return self.run.alone_s[item]

    def time_mix(self, items: frozenset[Item]) -> dict[Item, float]:
        """Time (s) of each item while all of them are in flight: its time alone times
        :meth:`slowdown` by the others."""
        if items in self.run.mixes:
            return self.run.mixes[items]
        times = {}
        for item in items:
            others = [(other, 1.0) for other in items if other != item]
            times[item] = self.alone(item) * self.slowdown(item, others)
        self.run.mixes[items] = times
        return times

    def slowdown(self, item: Item, others: Sequence[tuple[Item, float]]) -> float:
        """How much the item's bottleneck slows (>= 1) with ``others`` in flight, each present with
        the given weight (1: all the time; a fraction: its expected share of the time). Max-min
        fairness gives every flow on a link an equal share while all are there, so on link l the
        item needs ``bytes_l x all flows_l / its flows_l / capacity_l`` against
        ``bytes_l / capacity_l`` alone; the slowdown is the largest of the first over the largest of
        the second. A share is an upper bound on what the others leave it (flows held back elsewhere
        use less), so no link carries more than its capacity."""
        links, own_bytes, own_flows = self.load(item)
        if not links.size:
            return 1.0
        all_flows = own_flows.copy()
        for other, weight in others:
            o_links, _, o_flows = self.load(other)
            _, mine, theirs = np.intersect1d(links, o_links, assume_unique=True, return_indices=True)
            all_flows[mine] += weight * o_flows[theirs]
        capacity = self.capacity[links]
        slowdown = float((own_bytes * all_flows / own_flows / capacity).max() / (own_bytes / capacity).max())
        return max(slowdown, 1.0)


def _item_key(item: Item) -> tuple[int, int, str, int, int, int]:
    job, stage, p = item
    return job, stage, p.collective, p.size_bytes, p.group_gpus, p.group_stride


def _stage_of(job: FabricJob, rank: int) -> int:
    return rank % job.stages


def _comm_ops(job: FabricJob) -> list[int]:
    return [i for i, op in enumerate(job.graph.ops) if op.payload is not None and op.payload.group_gpus > 1]


def _nominal_call_s(job: FabricJob, op_index: int) -> float:
    op = job.graph.ops[op_index]
    if job.call_s is not None and op.payload in job.call_s:
        return job.call_s[op.payload]
    return op.duration_s / max(op.repeat, 1)


def _duration(job: FabricJob, op_index: int, network_call_s: float) -> float:
    """An op's duration when one call of its payload takes ``network_call_s`` on the fabric: the
    nominal duration scaled by max(1, network / nominal call time)."""
    op = job.graph.ops[op_index]
    nominal_call = _nominal_call_s(job, op_index)
    if nominal_call <= 0:
        return max(op.duration_s, op.repeat * network_call_s)
    return op.duration_s * max(1.0, network_call_s / nominal_call)


def _intervals(jobs: Sequence[FabricJob], timelines: Sequence[Timeline], ops: Sequence[list[int]]):
    """Every comm op instance over one horizon (the longest step), jobs repeating with their step
    period: arrays (start, end, job, op index, item id) and the item list."""
    horizon = max((t.makespan_s for t in timelines), default=0.0)
    items: dict[Item, int] = {}
    rows: list[tuple[float, float, int, int, int]] = []
    for j, (job, timeline, comm) in enumerate(zip(jobs, timelines, ops, strict=True)):
        period = timeline.makespan_s
        copies = int(np.ceil(horizon / period)) if period > 0 else 1
        for i in comm:
            op = job.graph.ops[i]
            item = (j, _stage_of(job, op.rank), op.payload)
            k = items.setdefault(item, len(items))  # type: ignore[arg-type]
            for c in range(max(copies, 1)):
                rows.append((timeline.start_s[i] + c * period, timeline.end_s[i] + c * period, j, i, k))
    return rows, list(items)


def _slowdowns(timer: ItemTimer, jobs: Sequence[FabricJob], timelines: Sequence[Timeline], ops: Sequence[list[int]]):
    """Per job, per comm op: the time-weighted slowdown over its intervals (every copy of it within
    the horizon, so a short job repeating under a long one sees all of it; see module docstring)."""
    rows, items = _intervals(jobs, timelines, ops)
    weighted: list[dict[int, float]] = [{} for _ in jobs]
    length: list[dict[int, float]] = [{} for _ in jobs]
    if not rows:
        return weighted
    table = np.array([(r[0], r[1]) for r in rows])
    order = np.argsort(table[:, 0], kind="stable")
    starts_sorted = table[order, 0]
    for start, end, j, i, k in rows:
        mine = items[k]
        length[j][i] = length[j].get(i, 0.0) + (end - start)
        alone = timer.alone(mine)
        candidates = order[: np.searchsorted(starts_sorted, end, side="left")]
        peers = [
            (max(rows[c][0], start), min(rows[c][1], end), items[rows[c][4]])
            for c in candidates[table[candidates, 1] > start].tolist()
            if rows[c][4] != k and timer.share_links(mine, items[rows[c][4]])
        ]
        total = end - start
        if peers and end > start and alone > 0:
            total = 0.0
            cuts = sorted({start, end, *(p[0] for p in peers), *(p[1] for p in peers)})
            for a, b in itertools.pairwise(cuts):
                active = frozenset([mine, *(other for s, e, other in peers if s < b and e > a)])
                ratio = timer.time_mix(active)[mine] / alone if len(active) > 1 else 1.0
                total += (b - a) * max(1.0, ratio)
        weighted[j][i] = weighted[j].get(i, 0.0) + total
    return [{i: w[i] / length[j][i] if length[j][i] > 0 else 1.0 for i in w} for j, w in enumerate(weighted)]


def fabric_durations(jobs: Sequence[FabricJob], fabric: Fabric) -> FabricRun:
    """Per-op durations of every job with the fabric in the loop (module docstring, steps 1-3)."""
    run = FabricRun([], [])
    timer = ItemTimer(jobs, fabric, run)
    comm = [_comm_ops(job) for job in jobs]
    durations = []
    for j, job in enumerate(jobs):
        d = np.array([op.duration_s for op in job.graph.ops], dtype=float)
        for i in comm[j]:
            op = job.graph.ops[i]
            d[i] = _duration(job, i, timer.alone((j, _stage_of(job, op.rank), op.payload)))  # type: ignore[arg-type]
        durations.append(d)
    alone = [d.copy() for d in durations]
    timelines = [execute(job.graph, d) for job, d in zip(jobs, durations, strict=True)]
    for round_ in range(1, MAX_ROUNDS + 1):
        run.rounds = round_
        slow = _slowdowns(timer, jobs, timelines, comm)
        moved = 0.0
        for j in range(len(jobs)):
            new = alone[j].copy()
            for i, factor in slow[j].items():
                new[i] = alone[j][i] * factor
            base = np.maximum(durations[j], 1e-30)
            moved = max(moved, float(np.max(np.abs(new - durations[j]) / base)) if new.size else 0.0)
            durations[j] = new
        timelines = [execute(job.graph, d) for job, d in zip(jobs, durations, strict=True)]
        if moved <= TOLERANCE:
            break
    run.durations, run.timelines = durations, timelines
    return run


def simulate_jobs(jobs: Sequence[FabricJob], fabric: Fabric) -> tuple[list[SimulationResult], FabricRun]:
    """Run the jobs' step graphs together on ``fabric``; one :class:`SimulationResult` per job."""
    run = fabric_durations(jobs, fabric)
    results = []
    for job, timeline in zip(jobs, run.timelines, strict=True):
        summary = comm_summary(job.graph, timeline)
        folded = dict(job.graph.folded)
        step_s = job.headline(timeline) if job.headline is not None else timeline.makespan_s
        results.append(SimulationResult(step_s, timeline, summary, folded, len(job.graph.ops)))
    return results, run


@dataclass(frozen=True, slots=True)
class OnFabric:
    """A job's seat on a fabric: the fabric, the endpoint of each GPU rank, and (for Monte-Carlo ECMP
    re-hashing) the same fabric routed with another hash seed."""

    fabric: Fabric
    host_of_gpu: np.ndarray
    reseeded: Callable[[int], Fabric] | None = None

    def durations(self, job: FabricJob, run: FabricRun) -> Callable[[int | None], np.ndarray]:
        """Per-op durations of ``job`` for a Monte-Carlo run: the nominal run's, or with a hash seed
        the fabric loop re-run on the re-seeded fabric."""

        def for_run(seed: int | None) -> np.ndarray:
            if seed is None or self.reseeded is None:
                return run.durations[0]
            return fabric_durations([job], self.reseeded(seed)).durations[0]

        return for_run


def system_fabric(system: SystemSpec, gpus: int, routing: str = "ecmp", seed: int = 0) -> OnFabric:
    """``gpus`` GPUs of ``system`` on its own fabric at flow fidelity, rank g on GPU g (node-major),
    no background; ``reseeded`` gives ECMP hash seeds for Monte-Carlo re-hashing."""
    from fabricsim.network.flow import FlowNetwork  # scipy: only when a flow fabric is built
    from fabricsim.topology.routing import Routing, route_table
    from fabricsim.topology.system import build_system_topology

    table = route_table(build_system_topology(system, gpus))
    domain = system.scale_up.domain_gpus
    fabric = Fabric(table.topology, FlowNetwork(table, Routing(routing), seed), domain)

    def reseeded(run_seed: int) -> Fabric:
        return Fabric(table.topology, FlowNetwork(table, Routing.ECMP, run_seed), domain)

    return OnFabric(fabric, np.arange(gpus, dtype=np.int64), reseeded)


def traffic_job(name: str, flows: FlowSet) -> FabricJob:
    """A synthetic tenant: ``flows`` (endpoint ids, all starting together) as one communication op,
    repeated back to back; its time is the flows' completion time on the fabric."""
    hosts = np.unique(np.concatenate([flows.src, flows.dst]))
    graph = OpGraph()
    graph.add_rank(RankClass(name, int(hosts.size)))
    payload = CommPayload("all-to-all", int(flows.size_bytes.sum()), int(hosts.size))  # a key; flows are fixed
    graph.add(Op(name, 0, Stream.DP_COMM, "traffic", 0.0, payload))
    return FabricJob(name, graph, hosts.astype(np.int64), 1, flows=flows)
