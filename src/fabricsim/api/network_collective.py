"""One collective on a simulated network (public API, layer L9): ``fabricsim collective --fidelity flow|packet``.

The collective's schedule (:func:`fabricsim.collectives.schedules.schedule_on`: the steps of the
op by the algorithm, a barrier between steps) runs step by step on a network model over a
topology: the catalog system's own fabric (its GPUs, NVSwitch domains, NICs and Clos; ranks on
GPUs node-major, NCCL-like multi-channel rings across nodes), or ``topology`` (a builder string
such as ``fat-tree:k=8``, one endpoint per host; ranks on the first ``gpus`` hosts).

* ``flow``: max-min fair flows (:class:`~fabricsim.network.flow.FlowNetwork`), no queues.
* ``packet``: MTU packets through switch queues with PFC or credits, ECN, DCQCN/HPCC or none
  (:class:`~fabricsim.network.packet.model.PacketNetwork`); the flow-fidelity time of the same
  schedule on the same routes is reported next to it (``flow_time_s``, ``packet_over_flow``), so
  the ratio is what queues, pauses and congestion control cost. On a system's own fabric the legs
  inside one scale-up domain (NVLink, ICI) that share no link with the step's NIC legs run apart,
  lossless (PFC, no sender CC) without the NIC's transport (:class:`~fabricsim.network.phase.ScaleUpSplit`, the
  rule of the train/infer/serve packet phases): a one-node collective takes the same time under
  every ``--transport``, ``--cc``, ``--cc-param`` and ``--ber``, and reports ``transport`` null (no
  NIC carried it; ``cc`` and ``lossless`` stay as given); a step ends when its later run
  ends, and the packet counters sum both runs. ``--topology`` builders have one endpoint per host:
  nothing is split there.

Folding: a step equal to the previous one is not simulated again (the network starts idle at
every barrier and both models are deterministic in the flow set, as in
:func:`~fabricsim.collectives.schedules.run_schedule`); its time and packet counters (pause time
and frames, ECN marks, queue histogram, drops) count once per step it stands for, while
``events`` counts the work actually simulated.

algbw = S / time_s and busbw = algbw x nccl-tests' bus factor of the op, S as nccl-tests defines
it per op (see :mod:`fabricsim.collectives.ops`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from fabricsim import catalog
from fabricsim.api.communication import message_size
from fabricsim.api.packet_traffic import MAX_PACKETS, packet_params
from fabricsim.api.topologies import build_topology
from fabricsim.collectives.ops import SWITCHLESS_OPS, Algorithm, CollectiveOp, bus_factor, parse_algorithm, parse_op
from fabricsim.collectives.placement import torus_rings
from fabricsim.collectives.schedules import ScheduleRequest, Step, schedule_on
from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.limits import check_cap
from fabricsim.network.base import FlowSet, make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.network.packet.model import PacketNetwork, PacketRun, _sample_rows
from fabricsim.network.packet.params import RunOptions, parse_cc, parse_lossless
from fabricsim.network.packet.summary import LINK_CLASSES, queue_percentile
from fabricsim.network.phase import ScaleUpSplit, merged_queue_hist, transport_name
from fabricsim.specs.inputs import SEED_LIMIT
from fabricsim.topology.graph import Topology
from fabricsim.topology.routing import Routing, parse_routing, route_table
from fabricsim.topology.system import build_system_topology
from fabricsim.units import to_GBps

# endpoints one run may place ranks on: the packet kernel simulates every packet (a 512-rank direct
# all-to-all of 64 MiB is ~8 M packets, about a minute); the flow model's cost grows with flows
MAX_ENDPOINTS = {"flow": 4096, "packet": 512}
TRACE_SAMPLES = 2000  # time-series samples over the whole collective for --trace
TRACE_SERIES_BYTES = 256 * 2**20  # cap on one step's time-series memory (rows x (2 flows + links) x 8 B)

# what ``auto`` runs, per op: the schedules NCCL would pick for bandwidth-bound sizes on a fabric
AUTO_ALGORITHM = {
    CollectiveOp.ALL_REDUCE: Algorithm.RING,
    CollectiveOp.ALL_GATHER: Algorithm.RING,
    CollectiveOp.REDUCE_SCATTER: Algorithm.RING,
    CollectiveOp.ALL_TO_ALL: Algorithm.DIRECT,
    CollectiveOp.BROADCAST: Algorithm.TREE,
    CollectiveOp.REDUCE: Algorithm.TREE,
    CollectiveOp.SEND_RECV: Algorithm.DIRECT,
}


class NetworkFidelity(StrEnum):
    FLOW = "flow"
    PACKET = "packet"


@dataclass(frozen=True, slots=True)
class NetworkCollectiveSpec:
    """What to run; every field is validated by :func:`network_collective`.

    ``system``: catalog name or YAML path (its fabric is the network unless ``topology`` is given;
    it is still loaded, so a typo is an error). ``cc``, ``lossless``, ``spray``, ``cc_params``
    (``NAME=VALUE`` overrides of :class:`PacketParams`), ``buffer`` and ``trace`` (record the time
    series ``--trace`` writes) are packet options, refused with ``fidelity="flow"``.
    """

    op: str
    system: str
    gpus: int
    size: str | int
    algorithm: str = "auto"
    fidelity: str = "flow"
    topology: str | None = None
    routing: str = "ecmp"
    seed: int = 0
    cc: str | None = None
    lossless: str | None = None
    spray: bool = False
    cc_params: tuple[str, ...] = ()
    buffer: str | int | None = None
    trace: bool = False


@dataclass(frozen=True, slots=True)
class NetworkCollectiveResult:
    """The JSON result (DESIGN.md keys and units); ``packet`` holds the packet-only keys, merged in."""

    op: str
    gpus: int
    size_bytes: int
    algorithm: str
    algorithm_choice: str  # "auto" (picked by AUTO_ALGORITHM) or "given"
    fidelity: str
    topology: str
    routing: str
    seed: int
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    steps: int
    simulated_steps: int
    events: int
    packet: dict[str, object] | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "op": self.op,
            "gpus": self.gpus,
            "size_bytes": self.size_bytes,
            "algorithm": self.algorithm,
            "algorithm_choice": self.algorithm_choice,
            "fidelity": self.fidelity,
            "topology": self.topology,
            "routing": self.routing,
            "seed": self.seed,
            "time_s": self.time_s,
            "algbw_GBps": self.algbw_GBps,
            "busbw_GBps": self.busbw_GBps,
            "steps": self.steps,
            "simulated_steps": self.simulated_steps,
            "events": self.events,
        }
        out.update(self.packet or {})
        return out


@dataclass(frozen=True, slots=True)
class NetworkCollective:
    """The result, and for ``trace``: each step's start (s) and packet run, and a label per link."""

    result: NetworkCollectiveResult
    step_runs: tuple[tuple[float, PacketRun], ...]
    link_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Placed:
    topology: Topology
    label: str
    ranks_per_node: int


def _check_options(spec: NetworkCollectiveSpec, fidelity: NetworkFidelity) -> None:
    if isinstance(spec.seed, bool) or not isinstance(spec.seed, int) or not 0 <= spec.seed < SEED_LIMIT:
        raise FabricsimError("seed", f"must be in 0..2^63-1, got {spec.seed!r}")
    if isinstance(spec.gpus, bool) or not isinstance(spec.gpus, int):
        raise FabricsimError("gpus", f"must be an integer, got {spec.gpus!r}")
    if spec.gpus < 2:
        raise FabricsimError("gpus", f"the {fidelity.value} fidelity needs at least 2 GPUs, got {spec.gpus}",
                             "use --fidelity analytic for one GPU")  # fmt: skip
    limit = MAX_ENDPOINTS[fidelity.value]
    if spec.gpus > limit:
        raise FabricsimError("gpus", f"{spec.gpus} endpoints exceed the {fidelity.value} fidelity's cap of {limit}",
                             f"use --gpus <= {limit}, or --fidelity analytic")  # fmt: skip
    if fidelity is NetworkFidelity.FLOW:
        given = [name for name, value in (("--cc", spec.cc), ("--lossless", spec.lossless), ("--buffer", spec.buffer))
                 if value is not None]  # fmt: skip
        given += ["--spray"] * spec.spray + ["--cc-param"] * bool(spec.cc_params) + ["--trace"] * spec.trace
        if given:
            raise FabricsimError("fidelity", f"{', '.join(given)} need --fidelity packet")


def _placed(spec: NetworkCollectiveSpec) -> _Placed:
    """The topology the ranks run on, its label, and the ranks per scale-up node (ring channels)."""
    system = catalog.load_system(spec.system)
    if spec.topology is None:
        system.check_gpu_count(spec.gpus)
        topo = build_system_topology(system, spec.gpus)
        return _Placed(topo, f"{system.name}:gpus={spec.gpus}", min(system.gpus_per_node, spec.gpus))
    topo = build_topology(spec.topology)
    if spec.gpus > topo.hosts:
        raise FabricsimError("gpus", f"{spec.gpus} ranks need {spec.gpus} endpoints, {spec.topology} has {topo.hosts}",
                             f"use --gpus <= {topo.hosts} or a larger --topology")  # fmt: skip
    per_node = int(topo.meta.get("gpus_per_node", 1)) if topo.meta else 1
    return _Placed(topo, spec.topology, per_node)


def _algorithm(spec: NetworkCollectiveSpec, op: CollectiveOp) -> tuple[Algorithm, str]:
    """The algorithm to schedule; ``auto``: :data:`AUTO_ALGORITHM`, or the mesh (direct exchanges
    over every pair link, :mod:`fabricsim.collectives.mesh`) inside one full-mesh scale-up domain
    of the system's own fabric, where one ring would use a single link of each GPU; likewise the
    per-dimension rings (:mod:`fabricsim.collectives.torus`) inside one torus domain."""
    algo = parse_algorithm(spec.algorithm)
    if algo is not Algorithm.AUTO:
        return algo, "given"
    if spec.topology is None and op in SWITCHLESS_OPS:
        up = catalog.load_system(spec.system).scale_up
        if up.full_mesh and spec.gpus <= up.domain_gpus:
            return Algorithm.MESH, "auto"
    if spec.topology is None and op in SWITCHLESS_OPS and _torus_rings(spec):
        return Algorithm.TORUS, "auto"
    return AUTO_ALGORITHM[op], "auto"


def _torus_rings(spec: NetworkCollectiveSpec) -> tuple[int, ...]:
    """Ranks per ring of the group of ``spec.gpus`` inside one torus domain of the system's own
    fabric; () when the domain is not a torus, the group leaves it or splits a dimension."""
    up = catalog.load_system(spec.system).scale_up
    if spec.topology is not None or not up.torus or spec.gpus > up.domain_gpus:
        return ()
    return tuple(n for n, _ in torus_rings(up.dims or (), spec.gpus, 1, up.torus_link_Bps))


def _step_flows(steps: tuple[Step, ...], placement: np.ndarray) -> list[tuple[FlowSet, int]]:
    """The flow set of every distinct step (a step equal to the previous one folds into it) and the
    number of schedule steps it stands for (the packet fidelity rounds a fractional chunk, e.g.
    S / p, up to a whole byte)."""
    out: list[tuple[FlowSet, int]] = []
    for i, step in enumerate(steps):
        if i and step.same_as(steps[i - 1]):
            out[-1] = (out[-1][0], out[-1][1] + 1)
            continue
        start = 0.0 if step.start_s is None else step.start_s
        out.append((make_flows(placement[step.src], placement[step.dst], step.size_bytes, start), 1))
    return out


def _check_size(unique: list[tuple[FlowSet, int]], mtu_bytes: float | None) -> None:
    check_cap("flows per step", max(f.count for f, _ in unique), "FLOWS")
    if mtu_bytes is None:
        return
    packets = sum(float(np.ceil(f.size_bytes / mtu_bytes).sum()) for f, _ in unique)
    if packets > MAX_PACKETS:
        raise FabricsimError("size", f"{packets:.3g} packets to simulate exceed the packet fidelity's cap "
                             f"{MAX_PACKETS:.0e}", "use a smaller --size, fewer --gpus or --fidelity flow")  # fmt: skip


def _sample_dt(flows: FlowSet, topo: Topology, target_dt_s: float) -> float:
    """``target_dt_s``, coarsened so that the time series the packet model allocates for one step
    (:func:`~fabricsim.network.packet.model._sample_rows` rows x (2 flows + links) x 8 B) stays
    under TRACE_SERIES_BYTES (rows go as 1 / interval)."""
    row_bytes = 8 * (2 * flows.count + topo.links)
    budget = TRACE_SERIES_BYTES // row_bytes
    if budget < 16:
        raise FabricsimError("trace", f"{flows.count} flows per step are too many to trace",
                             "drop --trace, or use fewer --gpus")  # fmt: skip
    dt = target_dt_s
    while (rows := _sample_rows(dt, flows, topo.line_rate_Bps)) > budget:  # a capped count under-states: repeat
        dt *= rows / (budget - 2)
    return dt


def _packet_keys(runs: list[tuple[PacketRun, int]], cc: str, lossless: str, nic: bool) -> dict[str, object]:
    """Pause, ECN, queue, drop and loss-recovery figures over the whole collective (each run weighted
    by the steps it stands for; queue maxima are maxima over steps; the FEC latency is per hop);
    the transport's name only where a leg crossed a NIC (``nic``), else None."""
    pause_s = sum(float(r.pause_s.sum()) * w for r, w in runs)
    frames = sum(int(r.pause_frames.sum()) * w for r, w in runs)
    marked = sum(r.ecn_marked * w for r, w in runs)
    delivered = sum(r.delivered_packets * w for r, w in runs)
    hist, bin_bytes = merged_queue_hist([(r.queue_hist, r.queue_bin_bytes, w) for r, w in runs])
    queues: dict[str, dict[str, float]] = {}
    for c, name in enumerate(LINK_CLASSES):
        if hist[c].sum() == 0:
            continue
        top = max(float(r.queue_max_bytes[r.link_class == c].max(initial=0.0)) for r, _ in runs)
        queues[name] = {"p99": queue_percentile(hist[c], bin_bytes, 0.99, top), "max": top}  # as summary.queue_bytes
    return {
        "transport": transport_name(parse_cc(cc), parse_lossless(lossless)) if nic else None,
        "cc": cc,
        "lossless": lossless,
        "pause_s": pause_s,
        "pause_frames": frames,
        "ecn_marked_fraction": marked / max(delivered, 1),
        "queue_bytes": queues,
        "drops": sum(r.drops * w for r, w in runs),
        "retransmitted_bytes": sum(r.retransmitted_bytes * w for r, w in runs),
        "trimmed_packets": sum(r.trimmed_packets * w for r, w in runs),
        "fec_latency_s": max(r.fec_latency_s for r, _ in runs),  # the NIC transport's (scale-up runs: 0)
        "delivered_bytes": sum(float(r.delivered_bytes.sum()) * w for r, w in runs),
        "offered_bytes": sum(float(r.flows.size_bytes.sum()) * w for r, w in runs),
    }


def network_collective(spec: NetworkCollectiveSpec) -> NetworkCollective:
    """Run ``spec``'s collective on the flow or packet network; see the module docstring."""
    fidelity = parse_choice("fidelity", spec.fidelity, NetworkFidelity)
    _check_options(spec, fidelity)
    op = parse_op(spec.op)
    algo, choice = _algorithm(spec, op)
    size_bytes = message_size(spec.size)
    policy = Routing.SPRAY if spec.spray else parse_routing(spec.routing)
    packet = fidelity is NetworkFidelity.PACKET
    if packet:
        cc = parse_cc("none" if spec.cc is None else spec.cc)
        lossless = parse_lossless("pfc" if spec.lossless is None else spec.lossless)
        params = packet_params(spec.cc_params, spec.buffer, lossless)
    placed = _placed(spec)
    rings = _torus_rings(spec) if algo is Algorithm.TORUS else ()
    request = ScheduleRequest(op, algo, spec.gpus, float(size_bytes), placed.ranks_per_node, rings)
    schedule = schedule_on(request, placed.topology, np.arange(spec.gpus))
    topo = schedule.topology
    unique = _step_flows(schedule.steps, schedule.placement)
    _check_size(unique, params.mtu_bytes if packet else None)
    table = route_table(topo)
    flow_net = FlowNetwork(table, policy, spec.seed)
    flow_results = [(flow_net.run(flows), w) for flows, w in unique]
    flow_time = sum(r.completion_time_s * w for r, w in flow_results)
    extra: dict[str, object] | None = None
    step_runs: tuple[tuple[float, PacketRun], ...] = ()
    if packet:
        steps: list[tuple[list[PacketRun], int]] = []
        nic = False  # whether any leg leaves its scale-up domain, i.e. crosses a NIC
        for flows, w in unique:
            dt = _sample_dt(flows, topo, flow_time / TRACE_SAMPLES) if spec.trace else 0.0
            opts = RunOptions(cc, lossless, topo.line_rate_Bps, dt, spec.seed)
            split = ScaleUpSplit(PacketNetwork(table, policy, params, opts))  # NVLink legs: their own run
            nic = nic or not bool(split.inside(flows).all())
            steps.append(([run for _, run in split.simulate(flows)], w))
        runs = [(run, w) for parts, w in steps for run in parts]
        time_s = sum(max(r.end_s for r in parts) * w for parts, w in steps)
        events = sum(r.events for r, _ in runs)
        extra = _packet_keys(runs, cc.value, lossless.value, nic)
        extra.update(flow_time_s=flow_time, packet_over_flow=time_s / flow_time)
        if spec.trace:
            step_runs = _timeline(steps)
    else:
        time_s = flow_time
        events = sum(r.events for r, _ in flow_results)
    if not (math.isfinite(time_s) and time_s > 0):
        raise RuntimeError(f"collective time {time_s!r} is not a positive number")  # a bug, not an input
    algbw = size_bytes / time_s
    result = NetworkCollectiveResult(
        op=op.value,
        gpus=spec.gpus,
        size_bytes=size_bytes,
        algorithm=algo.value,
        algorithm_choice=choice,
        fidelity=fidelity.value,
        topology=placed.label,
        routing=policy.value,
        seed=spec.seed,
        time_s=time_s,
        algbw_GBps=to_GBps(algbw),
        busbw_GBps=to_GBps(algbw * bus_factor(op, spec.gpus)),
        steps=len(schedule.steps),
        simulated_steps=len(unique),
        events=events,
        packet=extra,
    )
    names = tuple(f"{a}->{b}" for a, b in zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    return NetworkCollective(result, step_runs, names if spec.trace else ())


def _timeline(steps: list[tuple[list[PacketRun], int]]) -> tuple[tuple[float, PacketRun], ...]:
    """Every schedule step's start time and (possibly folded) packet runs, in order: a step of
    NVLink and NIC legs has two runs (:class:`~fabricsim.network.phase.ScaleUpSplit`), both at
    the step's start; the next step starts when the later ends."""
    out: list[tuple[float, PacketRun]] = []
    t = 0.0
    for parts, repeat in steps:
        for _ in range(repeat):
            out.extend((t, run) for run in parts)
            t += max(run.end_s for run in parts)
    return tuple(out)
