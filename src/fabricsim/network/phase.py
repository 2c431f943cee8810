"""Packet-level phases of a step, the NIC's transport and another tenant's background (layer L3).

The engine times every mix of concurrent collectives (a *phase*: flows of KB to GB on up to
thousands of endpoints) with :class:`PacketPhaseNetwork`, a
:class:`~fabricsim.network.base.NetworkModel` over the packet kernel
(:class:`~fabricsim.network.packet.model.PacketNetwork`) configured by a :class:`Transport`.

**Cut and extrapolate.** Simulating every packet of GBs takes minutes, so a phase is scaled down
by one common factor ``k`` = min(1, MAX_PHASE_PACKETS / estimated packets) (finite flows' packets
plus the background's packets over the phase's lower-bound length, busiest endpoint bytes / line
rate): every finite flow keeps ``ceil(k x size)`` bytes and its start offset from the phase's
first start is multiplied by ``k``; background rates are kept, so the cut run is the phase with
time compressed by ``k``. Flow i then finishes at

    start_i + fixed_i + (finish_cut_i - start_cut_i - fixed_cut_i) x size_i / size_cut_i

where ``fixed`` (path latency + store and forward of the last packet, for the full and the cut
size) is not scaled. The rule assumes the phase is bandwidth-bound in steady state: rates, queues,
pause and ECN patterns of the cut run hold for ``1 / k`` times longer in the full phase. Its limit:
the transient does not scale (queue build-up, the first RTTs, a flow cut to a few packets that
only measures the queue it waits in, and above all DCQCN's slow clock: 300 us rate-increase timer,
2 MB byte counter), yet it is extrapolated ``1 / k`` times. Without sender CC (InfiniBand) the cut
is close (tests: every flow within 1.7% of the uncut run at k = 0.10); under DCQCN the cut run
sits in a different part of the CC transient, measured within 9% at k = 0.26 but up to +46% and
-28% for cut runs well under a millisecond; a cut run cannot beat its bottleneck, so the result
stays at or above the fair share. ``k`` = 1 (a phase under the budget) is simulated as is, only
shifted to start at 0.

**Background** (:func:`background_flows`): flows of infinite size capped at ``max_rate_Bps`` are
another tenant's steady traffic on the scale-out fabric: every flow runs between two scale-up
domains, never inside one (that would be this job's NVLink). They start with the phase and send,
paced at most at their cap, until every finite flow is delivered (the kernel's stop rule), then
report ``finish_s = inf``. Background flows that share no link with any finite flow of the phase are left out of the run
(their only effect would be PFC pauses spreading from links the phase does not use).

**Scale-up traffic** (the flows whose ends share a scale-up domain, :func:`~fabricsim.topology.
placement.tier_map`: a DGX node's NVSwitch, an NVL72 rack, a TPU cube's ICI): the NIC transport
(RoCE/InfiniBand/UET headers, PFC, DCQCN/NSCC, spraying, loss recovery) belongs to the scale-out
fabric; NVLink and ICI carry their own link protocol. Before this rule every flow ran under the
NIC's transport: UET's NSCC capped an NVLink flow's window at ``nscc_max_window`` x the NIC's BDP
(the kernel's one line rate is the NIC's share), so a TP collective took 2.6x its InfiniBand time
on a quiet fabric. So a phase's flows inside one domain that share no link with its other flows are routed
(:data:`SCALE_UP_ROUTING`) and simulated in a run of their own, lossless by PFC, without sender CC
and with default parameters (:class:`~fabricsim.network.packet.params.PacketParams`): their times do
not depend on ``--transport``, ``--cc-param`` or ``--ber`` (NVLink retries CRC errors at link
level). Assumed: NVLink's and ICI's own flow control (link credits) is stood in for by PFC, and the
per-packet overhead is the kernel's for a PFC run (NVLink's flit framing is not modelled): the
kernel's link credits hold 2 BDP + 2 MTU per ingress, where a switch's PFC buffer is far deeper, and
back-pressure from shared links spread upstream (a 64-chip TPU v5p all-reduce of 16 MiB: 205.6 us under
credits, 68.9 us under PFC, 65.9 us fluid, measured before the torus virtual channels of
:mod:`fabricsim.network.packet.vc`, which system torus graphs do not get; a DGX H100 one: 82.9 us under
credits, 84.5 us under PFC, 82.0 us fluid; strict xfail ``test_link_credits_on_a_torus_are_as_fast_as_pfc``
records the buffer-depth gap). In-domain flows that share a link with
scale-out flows (a rail-only fabric's NVLink relay to another rail's NIC) stay in the NIC
transport's run. Both runs count in the counters below. The scale-up run's kernel line rate is the
scale-up link's (:func:`scale_up_line_Bps`: a DGX H100's 450 GB/s NVLink, not the GPU's 50 GB/s NIC
share); without sender CC it paces nothing (finish times are the same at either rate), but the ideal
FCT and so the fixed part of a cut phase's extrapolation are the link's. Its switch buffer is the
NIC run's (the queue histograms keep the same bins). :class:`ScaleUpSplit`
is the rule, used here and by ``collective --fidelity packet``
(:mod:`fabricsim.api.network_collective`).

**Counters** (:meth:`PacketPhaseNetwork.counters`), accumulated over runs, each run's time-like and
count-like figures multiplied by ``1 / k`` (steady state): ``pause_s`` (time upstream ends were
paused, summed over links), ``pause_frames``, ``credit_stall_s`` (credit mode: time queued packets
waited for a credit), ``ecn_marked_fraction`` (marked / delivered packets), ``drops``,
``retransmitted_bytes`` (payload the loss recovery sent again), ``trimmed_packets``, and
``queue_p99_bytes`` / ``queue_max_bytes`` per tier of switch egress: the packet kernel's link
classes (``switch_to_host``: leaf/ToR down-links; ``switch_to_switch``: every link between
switches, leaf-spine and above), as :mod:`~fabricsim.network.packet.summary` reports them;
also ``fec_latency_s``, the FEC latency every hop adds (the NIC transport's parameter; scale-up runs
add none). Runs whose histogram bins differ (a ``--buffer`` or ``mtu_bytes`` the scale-up run does
not take) are merged at the widest bin (:func:`merged_queue_hist`).
Background packets are the fabric's packets too and count in every figure.

**Traffic classes** (``classes`` > 1 in the transport's parameters, e.g. ``--cc-param classes=2
--cc-param background_class=1``): the job's flows (collectives, KV hand-offs: finite flows) run in
class 0, the background's in ``background_class`` (the kernel's rule,
:func:`~fabricsim.network.packet.model.PacketNetwork.simulate`), scheduled strict or weighted as
``class_sched`` says; the counters then add ``by_class`` {class: {flows, drops}} (flows simulated,
summed over runs; drops scaled by ``1 / k`` as above). With one class nothing is added.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
import scipy.sparse as sp

from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.network.base import FlowSet, NetworkResult, make_flows
from fabricsim.network.flowsizes import FlowSizeCdf, sample_sizes
from fabricsim.network.packet.kernel import HIST_BINS
from fabricsim.network.packet.model import PacketNetwork, PacketRun, _ideal_fct_s, _rate_caps
from fabricsim.network.packet.params import CongestionControl, Lossless, PacketParams, RunOptions, resolved
from fabricsim.network.packet.summary import LINK_CLASSES, queue_percentile
from fabricsim.network.patterns import derangement
from fabricsim.specs.fabric import LinkKind
from fabricsim.topology.graph import NodeKind, Topology
from fabricsim.topology.placement import tier_map
from fabricsim.topology.routing import Routes, RouteTable, Routing

# Packets one phase run may simulate (estimated, background included): the kernel runs about 1-2 M
# events/s and a packet makes ~2 events per hop (transmission done, arrival), so 200 k packets over
# 3-5 hops are a few seconds [chosen]. A congested run (oversubscription, PFC) may take a few times
# the estimate, since the estimate's phase length is a lower bound.
MAX_PHASE_PACKETS = 200_000

# Routing of the flows inside one scale-up domain (module docstring): one path through an NVSwitch
# or a full mesh; per-flow hashing over a torus domain's equal-cost paths [chosen: a fixed rule, so
# scale-up times do not follow the NIC transport's routing].
SCALE_UP_ROUTING = Routing.ECMP

# A sampled all-to-all: with n hosts, each host sends to at most this many others (evenly spaced
# around the ring of hosts), each at load x line / fanout; 8,192 hosts x 8,191 flows would not fit
# in memory, and the links see the same load [chosen].
MAX_BACKGROUND_FANOUT = 16
# websearch: connections per host, each to a uniformly random other host, sharing the host's load in
# proportion to sizes drawn from the WebSearch CDF (heavy-tailed: a few elephants carry most bytes,
# as in the trace) [chosen: DCTCP's web-search servers keep a handful of long-lived connections].
WEBSEARCH_CONNECTIONS = 4


class BackgroundPattern(StrEnum):
    PERMUTATION = "permutation"
    ALL_TO_ALL = "all-to-all"
    INCAST = "incast"
    WEBSEARCH = "websearch"


BACKGROUND_HELP = (
    "PATTERN:LOAD, another tenant's traffic between scale-up domains (never on NVLink): "
    "permutation|all-to-all|incast|websearch at LOAD in (0, 1]"
)

# --- transports -------------------------------------------------------------------------------

_ROCE_SOURCES = (
    ("lossless", "PFC (IEEE 802.1Qbb) on the RoCE priority: NVIDIA 'RoCE Configuration' / lossless RoCE "
     "(RoCEv2 assumes a lossless class); Meta RoCE training fabric, SIGCOMM'24"),
    ("cc", "DCQCN, ConnectX's default RoCE congestion control (NVIDIA DOCA 'DCQCN CC algorithm'; Zhu et al., "
     "SIGCOMM'15), ConnectX firmware defaults in shared/reference/congestion-control.md"),
    ("routing", "per-flow ECMP on the 5-tuple hash, the Ethernet switch default (adaptive routing is an "
     "opt-in, e.g. Spectrum-X); Meta SIGCOMM'24 and Alibaba HPN SIGCOMM'24 report ECMP collisions"),
)  # fmt: skip
_IB_SOURCES = (
    ("lossless", "link-level credit-based flow control (InfiniBand Architecture Specification Vol. 1, "
     "flow control): a port sends only into free receive buffer"),
    ("cc", "none: InfiniBand congestion control is an opt-in of the subnet manager (NVIDIA UFM Enterprise "
     "User Manual, 'OpenSM Configuration': mlnx_congestion_control 2 enables it)"),
    ("routing", "adaptive routing where the switch has it: NVIDIA Quantum/Quantum-2 switches (QM8700, "
     "QM9700) route adaptively per packet burst (NVIDIA 'Adaptive Routing' in the OpenSM/UFM docs); "
     "modelled as spraying each flow's packets over its equal-cost paths, the limit of per-packet "
     "adaptive routing on a balanced fabric (the per-flow least-loaded choice is the flowlet limit)"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Transport:
    """What the NICs and switches do with packets: lossless mode, sender CC, routing, each sourced."""

    name: str
    lossless: Lossless
    cc: CongestionControl
    routing: Routing
    sources: tuple[tuple[str, str], ...]
    params: PacketParams = field(default_factory=PacketParams)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "lossless": self.lossless.value,
            "cc": self.cc.value,
            "routing": self.routing.value,
            "sources": dict(self.sources),
        }


def transport_for(kind: LinkKind | str, adaptive_routing: bool = True) -> Transport:
    """The transport of a scale-out NIC kind: RoCE = PFC + DCQCN + ECMP; InfiniBand = credits, no
    ECN congestion control, per-packet adaptive routing as spraying (ECMP if ``adaptive_routing`` is
    False: a switch without it). The sources are in ``Transport.sources``."""
    try:
        link = LinkKind(str(getattr(kind, "value", kind)).strip().lower())
    except ValueError:
        raise FabricsimError("nic", f"unknown link kind {kind!r}", "use an infiniband or roce NIC") from None
    if link is LinkKind.ROCE:
        return Transport("roce", Lossless.PFC, CongestionControl.DCQCN, Routing.ECMP, _ROCE_SOURCES)
    if link is LinkKind.INFINIBAND:
        routing = Routing.SPRAY if adaptive_routing else Routing.ECMP
        return Transport("infiniband", Lossless.CREDIT, CongestionControl.NONE, routing, _IB_SOURCES)
    raise FabricsimError("nic", f"a {link.value} link is not a scale-out NIC", "use an infiniband or roce NIC")


_UET_SOURCES = (
    ("lossless", "none: Ultra Ethernet runs on a lossy (or best-effort) class; a full switch trims a packet "
     "to its headers instead of dropping it (UEC 1.0 specification, packet trimming; NDP, Handley et al., "
     "SIGCOMM'17)"),
    ("cc", "NSCC, UET's sender-based window control on ECN and queueing delay (UEC 1.0 specification, "
     "congestion management; simplified, see network/packet/reaction.py); RCCC receiver credits not modelled"),
    ("routing", "packet spraying: every packet hashed (ECMP) on one of UET_ENTROPIES entropy values the sender "
     "cycles through, delivered out of order and placed directly, acknowledged and resent selectively "
     "(UEC 1.0 specification, packet delivery sublayer)"),
)  # fmt: skip
UET_ENTROPIES = 256  # entropy values per flow [chosen: more than the 64 core paths of a k=16 fat-tree]


class TransportName(StrEnum):
    """``--transport``: the three transport families of the packet fidelity."""

    ROCE = "roce"
    IB = "ib"
    UET = "uet"


def named_transport(name: str) -> Transport:
    """The transport ``--transport NAME`` selects: RoCE and InfiniBand as :func:`transport_for`
    gives them for their NICs, or Ultra Ethernet (lossy with trimming, NSCC, spraying over
    :data:`UET_ENTROPIES` entropies, selective repeat)."""
    kind = parse_choice("transport", name, TransportName)
    if kind is TransportName.ROCE:
        return transport_for(LinkKind.ROCE)
    if kind is TransportName.IB:
        return transport_for(LinkKind.INFINIBAND)
    params = PacketParams(loss_recovery=1.0, trimming=1.0, entropies=float(UET_ENTROPIES))
    return Transport("uet", Lossless.NONE, CongestionControl.NSCC, Routing.SPRAY, _UET_SOURCES, params)


def transport_name(cc: CongestionControl, lossless: Lossless) -> str:
    """The family (``roce``, ``infiniband``, ``uet``) whose sender CC and lossless mode ``cc`` and
    ``lossless`` are, as :func:`named_transport` sets them, or ``custom`` for a pair none of them runs
    (e.g. ``--cc none --lossless pfc``). Routing and parameters are reported on their own."""
    for kind in TransportName:
        transport = named_transport(kind.value)
        if (transport.cc, transport.lossless) == (cc, lossless):
            return transport.name
    return "custom"


# --- counters ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PacketCounters:
    """Packet figures over every phase run so far (see the module docstring for the scaling)."""

    pause_s: float
    pause_frames: float
    credit_stall_s: float
    ecn_marked_fraction: float
    drops: float
    queue_p99_bytes: dict[str, float]
    queue_max_bytes: dict[str, float]
    runs: int
    min_cut_factor: float  # the smallest k of any run (1: nothing was cut)
    retransmitted_bytes: float = 0.0  # payload bytes the loss recovery sent again, summed over runs
    trimmed_packets: float = 0.0  # packets a full switch cut to their headers, summed over runs
    fec_latency_s: float = 0.0  # the FEC latency each hop adds (s; the same in every run)
    by_class: dict[str, dict[str, float]] | None = None  # {class: {flows, drops}}; None with one class

    def to_json(self) -> dict[str, object]:
        classes: dict[str, object] = {}
        if self.by_class is not None:
            rounded = {c: {key: round(value) for key, value in v.items()} for c, v in self.by_class.items()}
            classes["by_class"] = rounded
        return {
            "pause_s": self.pause_s,
            "pause_frames": round(self.pause_frames),
            "credit_stall_s": self.credit_stall_s,
            "ecn_marked_fraction": self.ecn_marked_fraction,
            "drops": round(self.drops),
            "queue_p99_bytes": dict(self.queue_p99_bytes),
            "queue_max_bytes": dict(self.queue_max_bytes),
            "packet_runs": self.runs,
            "min_cut_factor": self.min_cut_factor,
            "retransmitted_bytes": round(self.retransmitted_bytes),
            "trimmed_packets": round(self.trimmed_packets),
            "fec_latency_s": self.fec_latency_s,
            **classes,
        }


class _Tally:
    """Running sums behind :class:`PacketCounters`."""

    def __init__(self) -> None:
        names = ("pause_s", "pause_frames", "credit_stall_s", "marked", "delivered", "drops", "retransmitted",
                 "trimmed")  # fmt: skip
        self.sums = dict.fromkeys(names, 0.0)
        self.fec_latency_s = 0.0
        self.hist = np.zeros((len(LINK_CLASSES), HIST_BINS))
        self.qmax = np.zeros(len(LINK_CLASSES))
        self.runs = 0
        self.min_k = 1.0
        self.bin_bytes = 0.0
        self.class_flows = np.zeros(0)  # per traffic class: flows simulated (runs with several classes)
        self.class_drops = np.zeros(0)  # per traffic class: drops x 1 / k

    def add(self, run: PacketRun, k: float) -> None:
        w = 1.0 / k
        s = self.sums
        s["pause_s"] += float(run.pause_s.sum()) * w
        s["pause_frames"] += float(run.pause_frames.sum()) * w
        s["credit_stall_s"] += float(run.credit_stall_s.sum()) * w
        s["marked"] += run.ecn_marked * w
        s["delivered"] += run.delivered_packets * w
        s["drops"] += run.drops * w
        s["retransmitted"] += run.retransmitted_bytes * w
        s["trimmed"] += run.trimmed_packets * w
        self.fec_latency_s = max(self.fec_latency_s, run.fec_latency_s)  # the NIC transport's (scale-up: 0)
        width = max(self.bin_bytes, run.queue_bin_bytes)  # scale-up runs have their own buffer, so bins
        self.hist = (
            rebinned(self.hist, self.bin_bytes, width) + rebinned(run.queue_hist, run.queue_bin_bytes, width) * w
        )
        for c in range(len(LINK_CLASSES)):
            self.qmax[c] = max(self.qmax[c], float(run.queue_max_bytes[run.link_class == c].max(initial=0.0)))
        self.runs += 1
        self.min_k = min(self.min_k, k)
        self.bin_bytes = width
        if len(run.class_drops) > 1 and run.flow_class is not None:
            n = len(run.class_drops)
            if self.class_flows.size < n:  # the same params in every run: sized by the first
                self.class_flows, self.class_drops = np.zeros(n), np.zeros(n)
            self.class_flows += np.bincount(run.flow_class, minlength=n)[:n]
            self.class_drops += np.asarray(run.class_drops, dtype=float) * w

    def counters(self) -> PacketCounters:
        p99: dict[str, float] = {}
        top: dict[str, float] = {}
        for c, name in enumerate(LINK_CLASSES):
            if self.hist[c].sum() == 0:
                continue  # no switch egress of this class carried a packet (NIC uplinks never do)
            top[name] = float(self.qmax[c])
            p99[name] = queue_percentile(self.hist[c], self.bin_bytes, 0.99, top[name])  # as summary.queue_bytes
        s = self.sums
        return PacketCounters(
            pause_s=s["pause_s"],
            pause_frames=s["pause_frames"],
            credit_stall_s=s["credit_stall_s"],
            ecn_marked_fraction=s["marked"] / max(s["delivered"], 1.0),
            drops=s["drops"],
            queue_p99_bytes=p99,
            queue_max_bytes=top,
            runs=self.runs,
            min_cut_factor=self.min_k,
            retransmitted_bytes=s["retransmitted"],
            trimmed_packets=s["trimmed"],
            fec_latency_s=self.fec_latency_s,
            by_class=self._by_class(),
        )

    def _by_class(self) -> dict[str, dict[str, float]] | None:
        if self.class_flows.size == 0:
            return None  # one class (or no run): the counters stay as they were
        pairs = zip(self.class_flows.tolist(), self.class_drops.tolist(), strict=True)
        return {str(c): {"flows": f, "drops": d} for c, (f, d) in enumerate(pairs)}


def rebinned(hist: np.ndarray, bin_bytes: float, width: float) -> np.ndarray:
    """A queue histogram ``hist`` [classes, bins] of bins ``bin_bytes`` wide as bins ``width`` >=
    ``bin_bytes`` wide: bin i (queues from i x bin_bytes) is added to bin floor(i x bin_bytes /
    width), the last bin keeping what lies beyond. The same array when the widths are equal (or the
    histogram is still empty, ``bin_bytes`` 0)."""
    if bin_bytes == width or bin_bytes <= 0:
        return hist
    bins = hist.shape[-1]
    target = np.minimum(np.floor(np.arange(bins) * bin_bytes / width).astype(np.int64), bins - 1)
    out = np.zeros_like(hist)
    for c in range(hist.shape[0]):
        out[c] = np.bincount(target, hist[c], minlength=bins)
    return out


def merged_queue_hist(parts: list[tuple[np.ndarray, float, float]]) -> tuple[np.ndarray, float]:
    """The sum of queue histograms (hist, bin width in bytes, weight), all :func:`rebinned` to the
    widest bin, and that width: runs of the scale-up rule have their own parameters (buffer, so bins)."""
    width = max(b for _, b, _ in parts)
    return sum(rebinned(h, b, width) * w for h, b, w in parts), width


# --- the phase network ------------------------------------------------------------------------


class PacketPhaseNetwork:
    """:class:`~fabricsim.network.base.NetworkModel` at packet level for whole phases (module doc).

    ``routing`` overrides the transport's (a fabric configured for spraying or adaptive routing);
    ``max_packets`` the cut budget (tests)."""

    fidelity = "packet"

    def __init__(
        self,
        table: RouteTable,
        transport: Transport,
        seed: int = 0,
        routing: Routing | None = None,
        max_packets: int = MAX_PHASE_PACKETS,
    ) -> None:
        self.table = table
        self.transport = transport
        self.max_packets = max_packets
        line = table.topology.line_rate_Bps
        opts = RunOptions(transport.cc, transport.lossless, line, 0.0, seed)
        self.split = ScaleUpSplit(PacketNetwork(table, routing or transport.routing, transport.params, opts))
        self.network, self.scale_up = self.split.network, self.split.scale_up
        self._tally = _Tally()

    def counters(self) -> PacketCounters:
        return self._tally.counters()

    def routes(self, flows: FlowSet) -> Routes:
        """The routes the packets of ``flows`` take (:meth:`ScaleUpSplit.routes`)."""
        return self.split.routes(flows)

    def run(self, flows: FlowSet) -> NetworkResult:
        """Finish time of every flow of the phase (background: inf); see the module docstring."""
        return self.run_routed(flows, None)

    def run_routed(self, flows: FlowSet, routed: Routes | None) -> NetworkResult:
        """:meth:`run` on routes found before for every flow (None: route them here)."""
        topo = self.table.topology
        line = self.network.opts.line_Bps
        finish = np.where(flows.background, np.inf, flows.start_s)  # local and empty flows: at their start
        first = np.minimum(line, _rate_caps(flows))
        link_bytes = np.zeros(topo.links)
        busy = np.zeros(topo.links)
        timed = ~flows.background & (flows.src != flows.dst) & (flows.size_bytes > 0)
        if not timed.any():
            return NetworkResult(finish, first, link_bytes, busy, 0, self.fidelity)
        picked = np.flatnonzero(timed | (flows.background & (flows.src != flows.dst)))
        if routed is None:  # once: adaptive routing of 10k flows takes seconds
            routes = self.routes(_subset(flows, picked))
        else:
            routes = Routes(routed.incidence.tocsc()[:, picked], routed.latency_s[picked])
        keep = _touching(routes, timed[picked])
        picked = picked[keep]
        routes = Routes(routes.incidence[:, np.flatnonzero(keep)], routes.latency_s[keep])
        events = 0
        for network, group in self.split.groups(_subset(flows, picked), routes):
            sub = _subset(flows, picked[group])
            part = Routes(routes.incidence[:, group], routes.latency_s[group])
            k = self._cut_factor(sub, network)
            cut = _cut(sub, k)  # same ends, labels and start order: the same routes
            run = _Prerouted(network, part).simulate(cut)
            self._tally.add(run, k)
            fin = np.isfinite(sub.size_bytes)
            finish[picked[group][fin]] = self._extrapolate(sub, run, part, k, network)[fin]
            link_bytes += run.link_tx_bytes / k
            busy += run.link_tx_bytes / np.maximum(topo.capacity_Bps * max(run.end_s, 1e-30), 1e-30)
            events += run.events
        return NetworkResult(finish, first, link_bytes, busy, events, self.fidelity)

    def _cut_factor(self, flows: FlowSet, network: PacketNetwork) -> float:
        """k = min(1, budget / estimated packets) (module docstring)."""
        mtu = network.params.mtu_bytes
        line = network.opts.line_Bps
        fin = np.isfinite(flows.size_bytes)
        packets = float(np.ceil(flows.size_bytes[fin] / mtu).sum())
        size = np.where(fin, flows.size_bytes, 0.0)
        busiest = max(np.bincount(flows.src, size).max(), np.bincount(flows.dst, size).max())
        span = float(np.ptp(flows.start_s[fin])) + float(busiest) / line  # a lower bound on the phase
        rate = np.minimum(line, _rate_caps(flows)[~fin])
        packets += float(rate.sum()) * span / mtu
        return min(1.0, self.max_packets / max(packets, 1.0))

    def _extrapolate(
        self, full: FlowSet, run: PacketRun, routes: Routes, k: float, network: PacketNetwork
    ) -> np.ndarray:
        """Full-size finish times from the cut run (module docstring); background entries are nan."""
        fin = np.isfinite(full.size_bytes)
        origin = float(full.start_s[fin].min())
        if k >= 1.0:
            return run.finish_s + origin  # only shifted
        topo = self.table.topology
        mtu, line = network.params.mtu_bytes, network.opts.line_Bps
        inc = routes.incidence.tocsc()
        sized = np.where(fin, full.size_bytes, 0.0)
        cut_sized = np.where(fin, run.flows.size_bytes, 0.0)
        fixed_full = _ideal_fct_s(topo, replace(full, size_bytes=sized), inc, mtu, line) - sized / line
        fixed_cut = _ideal_fct_s(topo, replace(run.flows, size_bytes=cut_sized), inc, mtu, line) - cut_sized / line
        ratio = sized / np.maximum(cut_sized, 1.0)
        steady = np.maximum(np.where(fin, run.finish_s, 0.0) - run.flows.start_s - fixed_cut, 0.0)
        return np.where(fin, full.start_s + fixed_full + steady * ratio, np.nan)


class ScaleUpSplit:
    """The scale-up rule (module docstring) around ``network``, the NIC transport's packet network:
    the flows of a flow set inside one scale-up domain that share no link with its other flows run
    on :attr:`scale_up` (PFC, no sender CC, default parameters, :data:`SCALE_UP_ROUTING`,
    the kernel's line rate the scale-up link's: :func:`scale_up_line_Bps`), the rest on ``network``.
    Used by the packet phases of train/infer/serve and by ``collective --fidelity packet``."""

    def __init__(self, network: PacketNetwork) -> None:
        topo = network.table.topology
        self.network = network
        opts = replace(network.opts, cc=CongestionControl.NONE, lossless=Lossless.PFC,
                       line_Bps=scale_up_line_Bps(topo))  # fmt: skip
        # the NIC run's buffer keeps both runs' queue histograms in the
        # same bins (a default buffer at NVLink's rate would widen them 9x: 562.5 kB on a DGX H100)
        nic_buffer = resolved(network.params, network.opts.line_Bps).buffer_bytes
        self.scale_up = PacketNetwork(network.table, SCALE_UP_ROUTING, PacketParams(buffer_bytes=nic_buffer), opts)
        self.domain = tier_map(topo).domain

    def inside(self, flows: FlowSet) -> np.ndarray:
        """Whether each flow stays inside one scale-up domain (its ends' domains equal)."""
        return self.domain[flows.src] == self.domain[flows.dst]

    def routes(self, flows: FlowSet) -> Routes:
        """The routes the packets of ``flows`` take: the transport's routing, the scale-up domain's
        for the flows inside one domain."""
        inside = self.inside(flows)
        if not inside.any():
            return self.network.routes(flows)
        if inside.all():
            return self.scale_up.routes(flows)
        a, b = np.flatnonzero(inside), np.flatnonzero(~inside)
        up, out = self.scale_up.routes(_subset(flows, a)), self.network.routes(_subset(flows, b))
        order = np.argsort(np.concatenate([a, b]), kind="stable")
        incidence = sp.hstack([up.incidence.tocsc(), out.incidence.tocsc()], format="csc")[:, order]
        return Routes(incidence, np.concatenate([up.latency_s, out.latency_s])[order])

    def groups(self, flows: FlowSet, routes: Routes) -> list[tuple[PacketNetwork, np.ndarray]]:
        """The runs of ``flows`` (routed as :meth:`routes`): (network, flow indices). The flows inside
        one scale-up domain that share no link with the others run on :attr:`scale_up`; the rest on
        the NIC transport's network. Empty groups are left out."""
        inside = self.inside(flows)
        if inside.any() and not inside.all():
            inc = routes.incidence.tocsr()
            used = np.asarray(inc[:, np.flatnonzero(~inside)].sum(axis=1)).ravel() > 0
            inside &= np.asarray(inc[np.flatnonzero(used)].sum(axis=0)).ravel() == 0
        groups = [(self.scale_up, np.flatnonzero(inside)), (self.network, np.flatnonzero(~inside))]
        return [(network, group) for network, group in groups if group.size]

    def simulate(self, flows: FlowSet) -> list[tuple[np.ndarray, PacketRun]]:
        """Every run of ``flows`` (whole, nothing cut): (the flows' indices in ``flows``, its run)."""
        routes = self.routes(flows)
        out = []
        for network, group in self.groups(flows, routes):
            part = Routes(routes.incidence.tocsc()[:, group], routes.latency_s[group])
            out.append((group, _Prerouted(network, part).simulate(_subset(flows, group))))
        return out


def scale_up_line_Bps(topology: Topology) -> float:
    """The kernel's line rate of a scale-up run: the fastest link out of an endpoint that does not
    go to a NIC (a GPU's NVLink to its NVSwitch, its ICI router, a mesh peer link); the topology's
    line rate (an endpoint's NIC share) if there is none. Without sender CC it only sets what the
    kernel derives from it (the ideal FCT, the default buffer and so the queue histogram's bins)."""
    kind = topology.node_kind
    out = (kind[topology.link_src] == NodeKind.GPU) & (kind[topology.link_dst] != NodeKind.NIC)
    return float(topology.capacity_Bps[out].max()) if out.any() else float(topology.line_rate_Bps)


class _Prerouted(PacketNetwork):
    """``network`` with the routes of the flow set it will simulate already computed."""

    def __init__(self, network: PacketNetwork, routes: Routes) -> None:
        super().__init__(network.table, network.routing, network.params, network.opts)
        self._routes = routes

    def routes(self, flows: FlowSet) -> Routes:
        return self._routes


def _touching(routes: Routes, timed: np.ndarray) -> np.ndarray:
    """Every timed flow and the background flows that share a link with one of them."""
    if timed.all():
        return timed
    inc = routes.incidence.tocsr()
    used = np.asarray(inc[:, np.flatnonzero(timed)].sum(axis=1)).ravel() > 0
    return timed | (np.asarray(inc[np.flatnonzero(used)].sum(axis=0)).ravel() > 0)


def _subset(flows: FlowSet, index: np.ndarray) -> FlowSet:
    caps = None if flows.max_rate_Bps is None else flows.max_rate_Bps[index]
    return FlowSet(flows.src[index], flows.dst[index], flows.size_bytes[index], flows.start_s[index],
                   flows.label[index], caps)  # fmt: skip


def _cut(flows: FlowSet, k: float) -> FlowSet:
    """Finite flows: ceil(k x size) bytes, start offsets from the first finite start x k; background
    flows start at 0 (with the phase)."""
    fin = np.isfinite(flows.size_bytes)
    origin = float(flows.start_s[fin].min())
    size = np.where(fin, np.ceil(flows.size_bytes * k) if k < 1.0 else flows.size_bytes, np.inf)
    start = np.where(fin, (flows.start_s - origin) * k, 0.0)
    return replace(flows, size_bytes=size, start_s=np.maximum(start, 0.0))


# --- background -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BackgroundSpec:
    """``--background PATTERN:LOAD`` parsed: ``load`` in (0, 1]."""

    pattern: BackgroundPattern
    load: float

    @property
    def text(self) -> str:
        return f"{self.pattern.value}:{self.load:g}"

    def flows(self, hosts: np.ndarray, line_Bps: float, seed: int, domains: np.ndarray | None = None) -> FlowSet:
        return background_flows(self.pattern, self.load, hosts, line_Bps, seed, domains)


def parse_background(text: str) -> BackgroundSpec:
    """``PATTERN:LOAD`` (e.g. ``permutation:0.5``) -> :class:`BackgroundSpec`; one-line errors."""
    pattern, sep, load_text = str(text).strip().partition(":")
    pattern = pattern.strip().lower()
    if not sep:
        raise FabricsimError("background", f"{text!r} is not PATTERN:LOAD", "e.g. --background permutation:0.5")
    kind = parse_choice("background", pattern, BackgroundPattern)
    try:
        load = float(load_text)
    except ValueError:
        raise FabricsimError("background", f"load must be a number, got {load_text.strip()!r}",
                             "e.g. --background permutation:0.5") from None  # fmt: skip
    _check_load(load)
    return BackgroundSpec(kind, load)


def _check_load(load: float) -> None:
    if isinstance(load, bool) or not isinstance(load, (int, float)) or not math.isfinite(load) or not 0 < load <= 1:
        raise FabricsimError("background", f"load must be in (0, 1], got {load!r}", "e.g. --background permutation:0.5")


def background_flows(
    pattern: str | BackgroundPattern,
    load: float,
    hosts: np.ndarray,
    line_Bps: float,
    seed: int,
    domains: np.ndarray | None = None,
) -> FlowSet:
    """Another tenant's steady traffic over endpoints ``hosts``: flows of infinite size whose caps
    make every sending host offer ``load`` x ``line_Bps``.

    The tenant is on the scale-out fabric only: ``domains`` (one id per host, e.g. the scale-up
    domain of :func:`~fabricsim.topology.placement.tier_map`: a DGX node, an NVL72 rack, a TPU cube;
    None: every host its own) keeps every flow between two different domains, since another job's
    traffic cannot enter this job's NVLink/ICI domain. With one domain per host:

    * permutation: a seeded derangement, one flow per host at load x line;
    * all-to-all: every host to every other (at most MAX_BACKGROUND_FANOUT, evenly spaced), the load
      split evenly;
    * incast: every host but a seeded victim into the victim, each at load x line (the victim's
      down-link is (n - 1) x load over-subscribed: that is the pattern);
    * websearch: WEBSEARCH_CONNECTIONS connections per host to uniformly random others, the host's
      load split in proportion to sizes drawn from the WebSearch CDF (:mod:`~fabricsim.network.flowsizes`).

    With larger domains: permutation: the hosts listed domain by domain (domains and the hosts in
    each in a seeded order), each sending to the host ``s`` places on around that list, ``s`` drawn
    in [M, n - M] (M: the largest domain's hosts), so no flow stays in its domain; if one domain
    holds more than half the hosts, its hosts whose partner falls in their own domain send nothing.
    All-to-all: the pairs above that cross domains, the host's load split over them. Incast: the
    hosts outside the victim's domain. Websearch: destinations uniform over the other domains' hosts.
    Hosts all in one domain have no scale-out path: refused.
    """
    _check_load(load)
    pattern = parse_choice("background", pattern, BackgroundPattern)
    ids, first = np.unique(np.asarray(hosts, dtype=np.int64), return_index=True)
    n = ids.size
    if n < 2:
        raise FabricsimError("background", f"needs at least 2 hosts, got {n}")
    if not (math.isfinite(line_Bps) and line_Bps > 0):
        raise FabricsimError("background", f"line rate must be a positive number of bytes/s, got {line_Bps!r}")
    dom = np.arange(n) if domains is None else np.unique(np.asarray(domains)[first], return_inverse=True)[1]
    if dom.max() == 0:
        raise FabricsimError("background", f"all {n} endpoints are in one scale-up domain: another tenant's "
                             "traffic has no scale-out fabric to cross",
                             "use more GPUs than one scale-up domain, or leave --background out")  # fmt: skip
    rng = np.random.default_rng(seed)
    offered = load * line_Bps
    if np.bincount(dom).max() > 1:
        src, dst, rate = _cross_domain(pattern, dom, offered, rng)
    elif pattern == BackgroundPattern.PERMUTATION:
        src, dst, rate = np.arange(n), derangement(n, rng), np.full(n, offered)
    elif pattern == BackgroundPattern.ALL_TO_ALL:
        src, dst = _ring_pairs(n)
        rate = np.full(src.size, offered / (src.size // n))
    elif pattern == BackgroundPattern.INCAST:
        victim = int(rng.integers(n))
        src = np.delete(np.arange(n), victim)
        dst, rate = np.full(src.size, victim), np.full(src.size, offered)
    else:
        src = np.repeat(np.arange(n), WEBSEARCH_CONNECTIONS)
        dst = (src + rng.integers(1, n, src.size)) % n  # uniform over the other hosts
        rate = _websearch_rates(src.size, offered, rng)
    return make_flows(ids[src], ids[dst], np.inf, 0.0, label=np.arange(src.size), max_rate_Bps=rate)


def _ring_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """All-to-all pairs: each host to at most MAX_BACKGROUND_FANOUT others, evenly spaced around the ring."""
    fanout = min(n - 1, MAX_BACKGROUND_FANOUT)
    shifts = np.unique(np.round(np.arange(1, fanout + 1) * (n - 1) / fanout).astype(np.int64))
    src = np.repeat(np.arange(n), shifts.size)
    return src, (src + np.tile(shifts, n)) % n


def _websearch_rates(count: int, offered: float, rng: np.random.Generator) -> np.ndarray:
    """Each host's ``offered`` rate split over its WEBSEARCH_CONNECTIONS in proportion to WebSearch sizes."""
    sizes = sample_sizes(FlowSizeCdf.WEBSEARCH, count, rng).reshape(-1, WEBSEARCH_CONNECTIONS)
    return (offered * sizes / sizes.sum(axis=1, keepdims=True)).ravel()


def _cross_domain(
    pattern: BackgroundPattern, dom: np.ndarray, offered: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, rate) of ``pattern`` over hosts 0..n-1 in domains ``dom`` (0..d-1), every flow
    between two domains (:func:`background_flows`)."""
    n = dom.size
    if pattern == BackgroundPattern.PERMUTATION:
        order = np.concatenate([rng.permutation(np.flatnonzero(dom == d)) for d in rng.permutation(dom.max() + 1)])
        m = int(np.bincount(dom).max())
        shift = int(rng.integers(m, n - m + 1)) if 2 * m <= n else m
        src, dst = order, np.roll(order, -shift)
        cross = dom[src] != dom[dst]
        return src[cross], dst[cross], np.full(int(cross.sum()), offered)
    if pattern == BackgroundPattern.ALL_TO_ALL:
        src, dst = _ring_pairs(n)
        cross = dom[src] != dom[dst]
        src, dst = src[cross], dst[cross]
        return src, dst, offered / np.bincount(src, minlength=n)[src]
    if pattern == BackgroundPattern.INCAST:
        victim = int(rng.integers(n))
        src = np.flatnonzero(dom != dom[victim])
        return src, np.full(src.size, victim), np.full(src.size, offered)
    by_domain = np.argsort(dom, kind="stable")  # hosts listed domain by domain
    size = np.bincount(dom)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    src = np.repeat(np.arange(n), WEBSEARCH_CONNECTIONS)
    pick = rng.integers(0, n - size[dom[src]])  # uniform over the hosts of the other domains
    pick = np.where(pick < start[dom[src]], pick, pick + size[dom[src]])
    return src, by_domain[pick], _websearch_rates(src.size, offered, rng)
