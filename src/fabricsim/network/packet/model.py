"""Packet-level network model (layer L3): MTU packets through queues on the topology's routes.

:class:`PacketNetwork` routes a :class:`FlowSet` with the same routing as the other fidelities
(ECMP, adaptive: one path per flow; spray: the flow's equal-cost DAG, a path per packet), lays the
topology, flows and parameters out as the tables the compiled kernel
(:mod:`fabricsim.network.packet.loop`) runs on, and returns a :class:`PacketRun` with per-flow
finish times and per-link pause, queue and credit figures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.network.base import FlowSet, NetworkResult
from fabricsim.network.packet import layout as L  # noqa: N812 (the column-name table)
from fabricsim.network.packet.deadlock import pause_cycle
from fabricsim.network.packet.jit import announce_compile
from fabricsim.network.packet.kernel import (
    S_CLASS_DROPS,
    S_DELIVERED_PKTS,
    S_DROPS,
    S_EVENTS,
    S_MARKED,
    S_RETX_BYTES,
    S_SENT_PKTS,
    S_TRIMMED,
)
from fabricsim.network.packet.loop import run as run_kernel
from fabricsim.network.packet.params import (
    Lossless,
    PacketParams,
    RunOptions,
    check_classes,
    check_static_xoff,
    fec_latency_s,
    hist_bin_bytes,
    kernel_vector,
    link_ber,
    lossless_classes,
    resolved,
    wire_overhead,
)
from fabricsim.network.packet.vc import torus_channels
from fabricsim.topology.graph import NodeKind
from fabricsim.topology.routing import FlowEnds, Routes, RouteTable, Routing, route

MAX_SAMPLES = 20_000  # cap on time-series rows (memory: rows x (2 flows + links) x 8 B)


@dataclass(frozen=True, slots=True)
class PacketRun:
    """Everything one packet simulation measured. Times in s, sizes in bytes.

    ``ideal_fct_s``: alone on an empty network, store and forward: wire bytes (payload + every
    packet's headers and gap) / line rate + the last packet's serialisation on the later hops +
    path latency. ``series_*`` rows are samples every
    ``sample_dt_s`` from t = 0 (empty when sampling is off): delivered bytes and CC rate (bytes/s)
    per flow, queue bytes per link.
    """

    flows: FlowSet
    finish_s: np.ndarray
    delivered_bytes: np.ndarray
    ideal_fct_s: np.ndarray
    hops: np.ndarray
    link_class: np.ndarray  # 0 host->switch, 1 switch->host, 2 switch->switch
    link_tx_bytes: np.ndarray
    pause_s: np.ndarray  # per link: time its upstream end was paused
    pause_frames: np.ndarray  # per link: XOFF frames received by its upstream end
    credit_stall_s: np.ndarray  # per link: time a queued packet waited for a credit
    queue_max_bytes: np.ndarray  # per link
    queue_hist: np.ndarray  # [3 classes, bins] queue seen by arriving packets, bin = queue_bin_bytes
    mtu_bytes: float
    queue_bin_bytes: float  # params.hist_bin_bytes: an MTU, or the buffer / HIST_BINS if wider
    drops: int  # buffer overflows and, with a bit-error rate, corrupted packets
    fec_latency_s: float  # FEC latency added to every hop (s; in ``ideal_fct_s``'s path latency)
    retransmitted_bytes: int  # payload bytes sent more than once (go-back-N, selective repeat, trimming)
    trimmed_packets: int  # packets a full switch cut to their headers (``trimming``)
    ecn_marked: int
    delivered_packets: int
    sent_packets: int
    events: int
    end_s: float
    sample_dt_s: float
    series_delivered: np.ndarray
    series_rate: np.ndarray
    series_queue: np.ndarray
    class_drops: tuple[int, ...] = (0,)  # drops per traffic class (``classes`` entries)
    flow_class: np.ndarray | None = None  # each flow's traffic class


class PacketNetwork:
    """:class:`~fabricsim.network.base.NetworkModel` at packet level (see the package docstring)."""

    fidelity = "packet"

    def __init__(self, table: RouteTable, routing: Routing, params: PacketParams, opts: RunOptions) -> None:
        self.table = table
        self.routing = routing
        self.params = params
        self.opts = opts

    def routes(self, flows: FlowSet) -> Routes:
        ends = FlowEnds(flows.src, flows.dst, flows.start_s, flows.label)
        return route(self.table, ends, self.routing, self.opts.seed)

    def run(self, flows: FlowSet) -> NetworkResult:
        """The seam's result: finish times and per-link bytes (``first_rate_Bps`` is the line rate,
        or a flow's own cap if lower)."""
        out = self.simulate(flows)
        busy = out.link_tx_bytes / np.maximum(self.table.topology.capacity_Bps * max(out.end_s, 1e-30), 1e-30)
        first = np.minimum(self.opts.line_Bps, _rate_caps(flows))
        return NetworkResult(out.finish_s, first, out.link_tx_bytes, busy, out.events, self.fidelity)

    def simulate(self, flows: FlowSet) -> PacketRun:
        """Run ``flows`` to completion. Packets carry whole bytes, so a fractional flow size (a
        collective's S/p) is rounded up to the next byte, here, once, for the run and its summary.

        Flows of infinite size (background, paced at most at their ``max_rate_Bps``) send until every
        finite flow is delivered; their ``finish_s`` is inf. ``end_s`` is the last finite delivery."""
        if np.any(flows.src == flows.dst):
            raise FabricsimError("flows", "the packet fidelity needs src != dst for every flow")
        if flows.count == 0:
            raise FabricsimError("flows", "no flows to simulate")
        flows = replace(flows, size_bytes=np.ceil(flows.size_bytes))
        routes = self.routes(flows).incidence.tocsc()
        params = resolved(self.params, self.opts.line_Bps)
        check_classes(params, self.opts.lossless)
        topo = _with_fec(self.table.topology, params)
        LI, LF, uplink, shared = _link_tables(topo, params, self.opts.lossless)
        hops = np.asarray(routes.sum(axis=0)).ravel()
        latency = np.asarray(routes.T @ topo.latency_s).ravel()
        FI, FF = _flow_tables(flows, params, self.opts, latency, hops)
        FI[:, L.FI_SRC] = LI[_first_links(topo, flows, routes), L.LI_SRC_HOST]  # the flow's NIC port
        counts = np.bincount(FI[:, L.FI_SRC], minlength=uplink.size)
        hosts = (
            np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            np.zeros(uplink.size, dtype=np.int64),
            np.zeros(flows.count, dtype=np.int64),
            np.zeros(uplink.size, dtype=np.int64),
        )
        samples = _sample_rows(self.opts.sample_dt_s, flows, self.opts.line_Bps)
        LINT = np.zeros((flows.count, L.PF_COLS))
        rcvd = _receive_map(FI, flows, params.mtu_bytes)
        _check_frame_fits(params, wire_overhead(params, self.opts.cc, self.opts.lossless)[0])
        P = kernel_vector(self.params, self.opts)
        announce_compile(run_kernel)
        stats, hist, series, rows = run_kernel(
            (LI, LF, FI, FF, LINT, rcvd, _receivers(flows, topo.hosts)),
            (routes.indptr.astype(np.int64), routes.indices.astype(np.int64), _spray_offsets(routes, self.opts.seed)),
            hosts,
            uplink,
            shared,
            P,
            samples,
        )
        finite = np.isfinite(flows.size_bytes)
        if not FI[finite, L.FI_DONE].all():
            _stopped(LI, LF, routes, FI[finite, L.FI_DONE], params, self.opts.lossless)
        FF[~finite, L.FF_FINISH] = np.inf
        overhead = wire_overhead(params, self.opts.cc, self.opts.lossless)
        ideal = _ideal_fct_s(topo, flows, routes, params.mtu_bytes, self.opts.line_Bps, overhead)
        extra = (ideal, hops, params, self.opts, hist_bin_bytes(params))
        return _packet_run(flows, (LI, LF, FF, FI), (stats, hist, series, rows), extra)


def _stopped(LI: np.ndarray, LF: np.ndarray, routes, done: np.ndarray, params: PacketParams, lossless: Lossless):
    """The kernel ran out of events with finite flows undelivered (``done``: each one's flag). Under
    PFC with a cycle of paused links each waiting for the next (:mod:`deadlock`) that is the
    physics of PFC on a cyclic buffer dependency (a torus's rings, without virtual channels): a
    FabricsimError naming ``lossless``. Anything else is a kernel bug: a RuntimeError."""
    stuck = int(done.size - np.count_nonzero(done))
    cycle = pause_cycle(LI, LF, routes, int(params.classes)) if lossless == Lossless.PFC else ()
    if len(cycle):
        columns = L.LI_PAUSED + L.LI_CSTRIDE * np.arange(int(params.classes))  # every class's pause flag
        paused = int(np.count_nonzero(LI[:, columns].any(axis=1)))
        raise FabricsimError(
            "lossless",
            f"PFC deadlocked on a cyclic buffer dependency of {len(cycle)} links (each paused, its packets "
            f"queued on the next; {paused} links paused in all): {stuck} of {done.size} flows undelivered",
            "use --lossless credit (dateline virtual channels on tori) or --cc dcqcn",
        )
    why = "no cycle of paused links: a bug" if lossless == Lossless.PFC else "deadlock?"  # credits: see vc.py
    raise RuntimeError(f"packet kernel stopped with {stuck} undelivered flows ({why})")


def _receivers(flows: FlowSet, hosts: int):
    """Per receiving host, its flows (CSR: pointers, flow ids) and its credit pacer's round-robin
    position and running flag (:mod:`fabricsim.network.packet.credit`)."""
    ptr = np.concatenate([[0], np.cumsum(np.bincount(flows.dst, minlength=hosts))]).astype(np.int64)
    order = np.argsort(flows.dst, kind="stable").astype(np.int64)
    return ptr, order, np.zeros(hosts, dtype=np.int64), np.zeros(hosts, dtype=np.int64)


def _with_fec(topo, params: PacketParams):
    """The topology with the FEC latency of ``params`` added to every link (the same one if none)."""
    fec = fec_latency_s(params)
    return topo if fec == 0.0 else replace(topo, latency_s=topo.latency_s + fec)


def _receive_map(FI: np.ndarray, flows: FlowSet, mtu_bytes: float) -> np.ndarray:
    """The receivers' map of packets received, one byte per MTU of every finite flow (a flow of
    infinite size, a background tenant's, has none: its bytes are counted as they arrive). Sets each
    flow's ``FI_SLOT0``/``FI_SLOTS``. Memory: 1 B per packet offered."""
    finite = np.isfinite(flows.size_bytes)
    slots = np.where(finite, np.ceil(np.where(finite, flows.size_bytes, 0.0) / mtu_bytes), 0).astype(np.int64)
    FI[:, L.FI_SLOTS] = slots
    FI[:, L.FI_SLOT0] = np.concatenate([[0], np.cumsum(slots)[:-1]])
    return np.zeros(int(slots.sum()), dtype=np.uint8)


def _rate_caps(flows: FlowSet) -> np.ndarray:
    """Each flow's own rate cap in bytes/s (inf: none)."""
    return np.full(flows.count, np.inf) if flows.max_rate_Bps is None else flows.max_rate_Bps.astype(float)


def _ideal_fct_s(
    topo, flows: FlowSet, routes, mtu_bytes: float, line_Bps: float, overhead: tuple[float, float] = (0.0, 0.0)
) -> np.ndarray:
    """Alone on an empty network, store and forward: wire bytes / line rate + the last packet's
    serialisation on the later hops + path latency. ``overhead`` = (header, gap) bytes every packet
    adds on the wire (params.wire_overhead; none by default)."""
    per_packet = overhead[0] + overhead[1]
    last = np.minimum(flows.size_bytes, mtu_bytes) + per_packet
    wire = flows.size_bytes + np.ceil(flows.size_bytes / mtu_bytes) * per_packet
    per_byte = np.asarray(routes.T @ (1.0 / topo.capacity_Bps)).ravel()  # sum over hops of 1 / capacity
    latency = np.asarray(routes.T @ topo.latency_s).ravel()
    return wire / line_Bps + last * np.maximum(per_byte - 1 / line_Bps, 0) + latency


def _packet_run(flows: FlowSet, tables, outputs, extra) -> PacketRun:
    """Copy the kernel's tables and outputs into a :class:`PacketRun`."""
    LI, LF, FF, FI = tables
    stats, hist, series, rows = outputs
    ideal, hops, params, opts, bin_bytes = extra
    mtu_bytes, fec = params.mtu_bytes, fec_latency_s(params)
    return PacketRun(
        flows=flows,
        finish_s=FF[:, L.FF_FINISH].copy(),
        delivered_bytes=FF[:, L.FF_DELIVERED].copy(),
        ideal_fct_s=ideal,
        hops=hops,
        link_class=LI[:, L.LI_CLASS].copy(),
        link_tx_bytes=LF[:, L.LF_TXBYTES].copy(),
        pause_s=LF[:, L.LF_PAUSE_TOTAL].copy(),
        pause_frames=LI[:, L.LI_PAUSE_FRAMES].copy(),
        credit_stall_s=LF[:, L.LF_STALL_TOTAL].copy(),
        queue_max_bytes=LF[:, L.LF_QMAX].copy(),
        queue_hist=hist,
        mtu_bytes=mtu_bytes,
        queue_bin_bytes=bin_bytes,
        drops=int(stats[S_DROPS]),
        fec_latency_s=fec,
        retransmitted_bytes=int(stats[S_RETX_BYTES]),
        class_drops=tuple(int(d) for d in stats[S_CLASS_DROPS : S_CLASS_DROPS + int(params.classes)]),
        flow_class=FI[:, L.FI_CLASS].copy(),
        trimmed_packets=int(stats[S_TRIMMED]),
        ecn_marked=int(stats[S_MARKED]),
        delivered_packets=int(stats[S_DELIVERED_PKTS]),
        sent_packets=int(stats[S_SENT_PKTS]),
        events=int(stats[S_EVENTS]),
        end_s=float(FF[np.isfinite(flows.size_bytes), L.FF_FINISH].max(initial=0.0)),
        sample_dt_s=opts.sample_dt_s,
        series_delivered=series[0][:rows],
        series_rate=series[1][:rows],
        series_queue=series[2][:rows],
    )


def _first_links(topo, flows: FlowSet, routes) -> np.ndarray:
    """Each flow's first link: the lowest-id link of its route out of its source endpoint (an
    endpoint with several ports, e.g. NVLink and a NIC, sends a flow through one of them)."""
    flow_of = np.repeat(np.arange(flows.count), np.diff(routes.indptr))
    links = routes.indices.astype(np.int64)
    out = topo.link_src[links] == topo.endpoints[flows.src][flow_of]
    first = np.full(flows.count, np.iinfo(np.int64).max)
    np.minimum.at(first, flow_of[out], links[out])
    if np.any(first == np.iinfo(np.int64).max):
        raise FabricsimError("topology", "a flow's route does not leave its source", "check the topology's cabling")
    return first


def _spray_offsets(routes, seed: int) -> np.ndarray:
    """Seeded starting points of the per-(flow, switch) round-robin spraying counters."""
    return np.random.default_rng(seed).integers(0, 1 << 20, routes.indices.size).astype(np.int64)


def _sample_rows(dt_s: float, flows: FlowSet, line_Bps: float) -> int:
    """Rows for the time series: enough for 4 x the busiest endpoint's bytes (sent or received) at
    line rate after the last start, + 1 ms, capped (the kernel stops sampling when they are full)."""
    if dt_s <= 0:
        return 0
    finite = np.where(np.isfinite(flows.size_bytes), flows.size_bytes, 0.0)  # background: not a horizon
    busiest = max(np.bincount(flows.src, finite).max(), np.bincount(flows.dst, finite).max())
    horizon = float(flows.start_s.max()) + 4.0 * float(busiest) / line_Bps + 1e-3
    return int(min(MAX_SAMPLES, horizon / dt_s + 2))


def _link_tables(topo, params: PacketParams, lossless: Lossless):
    """LI/LF tables, the NIC ports (links out of endpoints) and the [used, pool] shared-buffer table
    of every node. ``LI_SRC_HOST`` of a NIC port is its port index, -1 on switch links."""
    links = topo.links
    host_of = np.full(topo.nodes, -1, dtype=np.int64)
    host_of[topo.endpoints] = np.arange(topo.hosts)
    src, dst = topo.link_src.astype(np.int64), topo.link_dst.astype(np.int64)
    classes = int(params.classes)  # the tables hold the per-class columns of the classes in use only
    LI = np.zeros((links, L.LI_QHEAD + classes * L.LI_CSTRIDE), dtype=np.int64)
    LI[:, L.LI_SRC], LI[:, L.LI_DST] = src, dst
    uplink = np.flatnonzero(host_of[src] >= 0)  # every link out of an endpoint is a NIC port
    LI[:, L.LI_SRC_HOST] = -1
    LI[uplink, L.LI_SRC_HOST] = np.arange(uplink.size)
    LI[:, L.LI_DST_HOST] = host_of[dst]
    LI[:, L.LI_TXPKT] = -1
    for c in range(classes):  # every class's FIFO empty
        LI[:, L.LI_QHEAD + c * L.LI_CSTRIDE] = LI[:, L.LI_QTAIL + c * L.LI_CSTRIDE] = -1
    LI[:, L.LI_CQHEAD] = LI[:, L.LI_CQTAIL] = -1
    LI[:, L.LI_REV] = _reverse_links(src, dst, topo.nodes)
    LI[:, L.LI_CLASS] = np.where(host_of[src] >= 0, 0, np.where(host_of[dst] >= 0, 1, 2))
    LF = np.zeros((links, L.LF_ING + classes * L.LF_CSTRIDE))
    LF[:, L.LF_CAP], LF[:, L.LF_LAT] = topo.capacity_Bps, topo.latency_s
    LF[:, L.LF_STALL_START] = -1.0
    LF[:, L.LF_BER] = link_ber(params, LI[:, L.LI_CLASS])
    bdp = topo.capacity_Bps * topo.latency_s
    LF[:, L.LF_HEADROOM] = 2 * bdp + 2 * params.mtu_bytes
    credit = params.credit_bytes if params.credit_bytes is not None else 2 * bdp + 2 * params.mtu_bytes
    LI[:, L.LI_CREDITS] = np.maximum(1, np.ceil(np.broadcast_to(credit, links) / params.mtu_bytes)).astype(np.int64)
    LI[:, L.LI_DIM], LI[:, L.LI_DATELINE] = torus_channels(topo)  # credits on a torus: two VCs (vc.py)
    LI[:, L.LI_CREDITS_VC1] = np.where(LI[:, L.LI_DIM] >= 0, LI[:, L.LI_CREDITS], 0)  # a buffer per VC [assumed]
    LI[:, L.LI_VQHEAD] = LI[:, L.LI_VQTAIL] = -1
    shared = np.zeros((2, topo.nodes))
    shared[1] = params.buffer_bytes
    if lossless == Lossless.PFC:
        reserved = np.bincount(dst, LF[:, L.LF_HEADROOM], topo.nodes) * lossless_classes(params)
        shared[1] -= reserved
        switches = topo.node_kind != NodeKind.GPU
        if np.any(shared[1][switches] <= 0):
            need = float(reserved[switches].max())
            raise FabricsimError(
                "buffer",
                f"{params.buffer_bytes:.0f} B per switch cannot hold the PFC headroom of its ports ({need:.0f} B)",
                f"use --buffer larger than {need:.0f}",
            )
        counters = np.bincount(dst, minlength=topo.nodes)[switches] * max(lossless_classes(params), 1)
        check_static_xoff(params, counters, shared[1][switches])  # an XOFF counter per ingress and lossless class
    return LI, LF, uplink, shared


def _check_frame_fits(params: PacketParams, header_bytes: float) -> None:
    """Refuse a switch buffer (or a lossy queue cap) smaller than one full frame (MTU + headers): every
    packet would be dropped, and its sender would resend it for ever."""
    frame = params.mtu_bytes + header_bytes
    if params.buffer_bytes < frame:
        raise FabricsimError("buffer", f"{params.buffer_bytes:g} B cannot hold one {frame:g} B frame "
                             f"({params.mtu_bytes:g} B of payload + {header_bytes:g} B of headers)",
                             f"use --buffer of at least {frame:g}")  # fmt: skip
    if 0 < params.queue_bytes < frame:
        raise FabricsimError("cc-param", f"queue_bytes={params.queue_bytes:g} cannot hold one {frame:g} B frame",
                             f"use queue_bytes >= {frame:g}, or 0 (no cap)")  # fmt: skip
    if any(0 < cap < frame for cap in params.class_queue_bytes or ()):
        raise FabricsimError("cc-param", f"class_queue_bytes={','.join(f'{c:g}' for c in params.class_queue_bytes)}"
                             f" has a cap below one {frame:g} B frame",
                             f"use caps >= {frame:g}, or 0 (no cap)")  # fmt: skip


def _reverse_links(src: np.ndarray, dst: np.ndarray, nodes: int) -> np.ndarray:
    """For each link src -> dst, the id of a link dst -> src (-1 if there is none)."""
    key = src * nodes + dst
    order = np.argsort(key, kind="stable")
    want = dst * nodes + src
    at = np.minimum(np.searchsorted(key[order], want), key.size - 1)
    return np.where(key[order][at] == want, order[at], -1).astype(np.int64)


def _flow_tables(flows: FlowSet, params: PacketParams, opts: RunOptions, latency: np.ndarray, hops: np.ndarray):
    """FI/FF tables: endpoints, sizes, starts, and every CC's initial state (full line rate)."""
    n = flows.count
    FI = np.zeros((n, L.FI_COLS), dtype=np.int64)
    FI[:, L.FI_SRC], FI[:, L.FI_DST] = flows.src, flows.dst
    FF = np.zeros((n, L.FF_COLS))
    FF[:, L.FF_SIZE], FF[:, L.FF_START] = flows.size_bytes, flows.start_s
    FF[:, L.FF_RATE_CAP] = _rate_caps(flows)
    FF[:, L.FF_RC] = FF[:, L.FF_RT] = np.minimum(opts.line_Bps, FF[:, L.FF_RATE_CAP])
    FF[:, L.FF_ALPHA] = params.alpha_initial
    FF[:, L.FF_ALPHA_T] = flows.start_s - params.alpha_period_s
    FF[:, L.FF_LAST_DEC] = FF[:, L.FF_LAST_CNP] = -1.0
    FF[:, L.FF_TIMER_T] = flows.start_s
    FF[:, L.FF_RET_LAT] = latency
    rtt = 2 * latency + hops * params.mtu_bytes / opts.line_Bps
    FF[:, L.FF_BASE_RTT] = rtt
    FF[:, L.FF_WIN] = FF[:, L.FF_WINC] = FF[:, L.FF_RC] * rtt
    FF[:, L.FF_CREDIT] = FF[:, L.FF_RC] * rtt  # RCCC: the first round trip is sent unscheduled
    FF[:, L.FF_FIRST_TX] = FF[:, L.FF_LAST_TX] = -1.0
    FF[:, L.FF_FINISH] = np.nan
    FF[:, L.FF_GAP] = np.inf
    FI[:, L.FI_RQ_HEAD] = FI[:, L.FI_RQ_TAIL] = -1
    FI[:, L.FI_LOST_HEAD] = FI[:, L.FI_LOST_TAIL] = -1
    FI[:, L.FI_CLASS] = _traffic_classes(flows, params)
    return FI, FF


def _traffic_classes(flows: FlowSet, params: PacketParams) -> np.ndarray:
    """Each flow's traffic class: the flow set's own (``traffic --matrix`` with a class column), else
    0 for finite flows and ``background_class`` for the flows of infinite size (a background tenant's)."""
    if flows.traffic_class is None:
        return np.where(np.isfinite(flows.size_bytes), 0, int(params.background_class))
    top = int(flows.traffic_class.max(initial=0))
    if top >= params.classes:
        raise FabricsimError("cc-param", f"a flow is in traffic class {top} but classes={params.classes:g}",
                             f"set --cc-param classes={top + 1} (or more)")  # fmt: skip
    return flows.traffic_class
