"""Traffic at packet level (public API, layer L9): ``fabricsim traffic ... --fidelity packet``.

Parses and validates every packet-fidelity input once (congestion control, lossless mode, the
``NAME=VALUE`` parameter overrides, buffer, load), builds the flows (a synthetic pattern, or
open-loop arrivals from a flow-size CDF), runs :class:`~fabricsim.network.packet.model.PacketNetwork`
and returns the flow fidelity's :class:`TrafficResult` keys plus the packet ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fabricsim.api.topologies import build_topology
from fabricsim.api.traffic_inputs import failed_topology, failure_count, matrix_flows
from fabricsim.errors import FabricsimError
from fabricsim.limits import CAPS, cap, cap_hint, check_cap
from fabricsim.metrics import TrafficResult
from fabricsim.network.base import FlowSet
from fabricsim.network.flowsizes import FlowSizeCdf, parse_cdf, poisson_flows
from fabricsim.network.packet.model import PacketNetwork, PacketRun
from fabricsim.network.packet.params import (
    Lossless,
    PacketParams,
    RunOptions,
    parse_cc,
    parse_cc_params,
    parse_lossless,
)
from fabricsim.network.packet.summary import summarize
from fabricsim.network.patterns import flow_count, host_throughput_fraction, parse_pattern, pattern_flows
from fabricsim.network.phase import transport_name
from fabricsim.specs.inputs import SEED_LIMIT
from fabricsim.topology.graph import Topology
from fabricsim.topology.routing import Routing, parse_routing, route_table
from fabricsim.units import parse_size

MAX_PACKETS = CAPS["PACKETS"]  # the default cap (``collective --fidelity packet`` checks this constant)


@dataclass(frozen=True, slots=True)
class PacketTrafficSpec:
    """What to run at packet level; every field is validated by :func:`packet_traffic`.

    ``pattern``: permutation | all-to-all | incast | ring, or a flow-size CDF (websearch |
    fb-hadoop) for open-loop Poisson arrivals at ``load`` for ``duration_s``. ``cc_params``:
    ``NAME=VALUE`` overrides of :class:`PacketParams` fields. ``series`` records the per-flow
    rate / per-link queue time series (for ``--trace``), every ``sample_dt_s`` (0: about 2,000
    samples over the busiest receiver's ideal makespan). ``fail_links`` fabric cables, or
    ``fail_fraction`` of them, drawn with ``seed`` (as the flow fidelity draws them), are removed
    and the healthy run is reported alongside. ``matrix``: a traffic-matrix file (CSV or JSON
    Lines: src, dst, bytes, start_s) instead of ``pattern`` (:mod:`fabricsim.network.matrix`).
    """

    pattern: str | None
    topology: str
    routing: str = "ecmp"
    seed: int = 0
    size: str | int = "1MiB"
    hosts: int | None = None
    cc: str = "none"
    lossless: str = "pfc"
    spray: bool = False
    cc_params: tuple[str, ...] = ()
    buffer: str | int | None = None
    load: float = 0.3
    duration_s: float = 1e-3
    series: bool = False
    sample_dt_s: float = 0.0
    fail_links: int = 0
    fail_fraction: float = 0.0
    matrix: str | None = None


@dataclass(frozen=True, slots=True)
class PacketTraffic:
    """The JSON result, the raw run (for traces and tests) and a label per link (``"src->dst"``)."""

    result: TrafficResult
    run: PacketRun
    link_names: list[str]


def _flows(spec: PacketTrafficSpec, topo: Topology, count: int) -> tuple[FlowSet, str, int]:
    """The flow set, the pattern's canonical name and the nominal bytes per flow."""
    if spec.matrix is not None:
        flows = matrix_flows(spec.matrix, count)
        if spec.pattern is not None:
            raise FabricsimError("matrix", "a matrix file replaces PATTERN", "give PATTERN or --matrix FILE, not both")
        return flows, "matrix", int(np.ceil(flows.size_bytes.mean()))
    if spec.pattern is None:
        raise FabricsimError("pattern", "is missing", "give PATTERN (e.g. incast) or --matrix FILE")
    if spec.pattern in {c.value for c in FlowSizeCdf}:
        cdf = parse_cdf(spec.pattern)
        flows = poisson_flows(cdf, count, spec.load, spec.duration_s, (topo.line_rate_Bps, spec.seed))
        if flows.count == 0:
            raise FabricsimError("duration", "no flow arrived in that time", "raise --duration or --load")
        return flows, cdf.value, int(flows.size_bytes.mean())
    kind = parse_pattern(spec.pattern)
    check_cap(f"{kind.value} flows", flow_count(kind, count), "FLOWS")
    size_bytes = parse_size(spec.size, "size")
    if size_bytes == 0:
        raise FabricsimError("size", "must be at least 1 byte", "e.g. --size 1MiB")
    return pattern_flows(kind, count, float(size_bytes), spec.seed), kind.value, size_bytes


def packet_params(cc_params: tuple[str, ...], buffer: str | None, lossless: Lossless = Lossless.PFC) -> PacketParams:
    """Packet parameters with the ``--cc-param NAME=VALUE`` overrides and the ``--buffer`` size
    (shared by ``traffic`` and ``collective`` at packet fidelity).

    With credit flow control (InfiniBand) a switch buffers per input port, as many bytes as the
    credits it grants (``credit_bytes``), not in a shared pool: ``--buffer`` is refused there rather
    than ignored."""
    overrides = parse_cc_params(cc_params)
    if buffer is not None and lossless == Lossless.CREDIT:
        raise FabricsimError(
            "buffer",
            "does not apply with --lossless credit (a switch buffers per input port, as much as its credits)",
            "size that buffer with --cc-param credit_bytes=N (bytes per input port), or use --lossless pfc",
        )
    if buffer is not None:
        buffer_bytes = parse_size(buffer, "buffer")
        if buffer_bytes <= 0:
            raise FabricsimError("buffer", "must be positive", "e.g. --buffer 32MB")
        overrides["buffer_bytes"] = float(buffer_bytes)
    return PacketParams().with_overrides(overrides)


def _check_numbers(spec: PacketTrafficSpec) -> None:
    if isinstance(spec.seed, bool) or not isinstance(spec.seed, int) or not 0 <= spec.seed < SEED_LIMIT:
        raise FabricsimError("seed", f"must be in 0..2^63-1, got {spec.seed!r}")
    fails = spec.fail_links
    if isinstance(fails, bool) or not isinstance(fails, int) or fails < 0:
        raise FabricsimError("fail-links", f"must be an integer >= 0, got {fails!r}")
    if not (isinstance(spec.fail_fraction, (int, float)) and 0 <= spec.fail_fraction <= 1):
        raise FabricsimError("fail-fraction", f"must be in [0, 1], got {spec.fail_fraction!r}")
    for field, value in (("load", spec.load), ("duration", spec.duration_s), ("sample_dt", spec.sample_dt_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise FabricsimError(field, f"must be a finite number >= 0, got {value!r}")
    # checked for every pattern (only websearch / fb-hadoop read them), so a wrong value is never ignored
    if not 0 < spec.load <= 1:
        raise FabricsimError("load", f"must be in (0, 1], got {spec.load!r}", "e.g. --load 0.3")
    if spec.duration_s <= 0:
        raise FabricsimError("duration", f"must be a positive time in seconds, got {spec.duration_s!r}", "e.g. 1e-3")


def _check_packet_caps(hosts: int, packets: float | None) -> None:
    """Refuse more hosts than ``PACKET_ENDPOINTS`` or (once the flows are known) more packets than
    ``PACKETS``: such a run takes minutes. Each message names the variable that raises the cap."""
    limit = cap("PACKET_ENDPOINTS")
    if hosts > limit:
        fix = f"use --hosts <= {limit} or --fidelity flow, or {cap_hint('PACKET_ENDPOINTS')}"
        raise FabricsimError("hosts", f"{hosts} endpoints exceed the packet fidelity's cap {limit}", fix)
    if packets is not None and packets > cap("PACKETS"):
        fix = f"use a smaller --size or fewer --hosts, or {cap_hint('PACKETS')}"
        raise FabricsimError("size", f"{packets:.3g} packets exceed the packet fidelity's cap {cap('PACKETS')}", fix)


def _sample_dt(spec: PacketTrafficSpec, flows: FlowSet, topo: Topology) -> float:
    if not spec.series:
        return 0.0
    if spec.sample_dt_s > 0:
        return spec.sample_dt_s
    received = np.bincount(flows.dst, flows.size_bytes, topo.hosts).max()
    horizon = float(flows.start_s.max()) + float(received) / topo.line_rate_Bps
    return max(1e-8, horizon / 2000)


def _healthy_keys(failures: int, healthy: PacketRun | None, flows: FlowSet, line_Bps: float) -> dict[str, object]:
    """The result's failure keys: how many cables failed and, if any, the healthy run's figures."""
    if healthy is None:
        return {"failed_links": failures}
    fraction = host_throughput_fraction(flows, healthy.finish_s, line_Bps)
    return {
        "failed_links": failures,
        "healthy_throughput_mean": float(fraction.mean()),
        "healthy_completion_time_s": healthy.end_s,
    }


def packet_traffic(spec: PacketTrafficSpec) -> PacketTraffic:
    """Run ``spec`` at packet level; see :class:`PacketTrafficSpec`.

    ``completion_time_s`` is the last delivery; ``max_link_utilization`` is the busiest link's
    mean utilisation over the run (bytes carried / capacity / completion time).
    """
    _check_numbers(spec)
    cc, lossless = parse_cc(spec.cc), parse_lossless(spec.lossless)
    policy = Routing.SPRAY if spec.spray else parse_routing(spec.routing)
    params = packet_params(spec.cc_params, spec.buffer, lossless)
    topo = build_topology(spec.topology)
    count = topo.hosts if spec.hosts is None else spec.hosts
    if not 2 <= count <= topo.hosts:
        raise FabricsimError("hosts", f"must be in [2, {topo.hosts}] on {spec.topology}, got {count}")
    _check_packet_caps(count, None)
    flows, pattern, size_bytes = _flows(spec, topo, count)
    _check_packet_caps(count, float(np.ceil(flows.size_bytes / params.mtu_bytes).sum()))
    opts = RunOptions(cc, lossless, topo.line_rate_Bps, _sample_dt(spec, flows, topo), spec.seed)
    failures = failure_count(topo, spec.fail_links, spec.fail_fraction)
    failed = failed_topology(topo, flows, failures, spec.seed) if failures else topo
    run = PacketNetwork(route_table(failed), policy, params, opts).simulate(flows)
    fraction = host_throughput_fraction(flows, run.finish_s, topo.line_rate_Bps)
    healthy = PacketNetwork(route_table(topo), policy, params, opts).simulate(flows) if failures else None
    busy = run.link_tx_bytes / (failed.capacity_Bps * max(run.end_s, 1e-30))
    packet = {"transport": transport_name(cc, lossless), "cc": cc.value, "lossless": lossless.value, **summarize(run)}
    result = TrafficResult(
        pattern=pattern,
        topology=spec.topology,
        routing=policy.value,
        seed=spec.seed,
        hosts=count,
        flows=flows.count,
        size_bytes=size_bytes,
        throughput_mean=float(fraction.mean()),
        throughput_p1=float(np.percentile(fraction, 1)),
        throughput_min=float(fraction.min()),
        completion_time_s=run.end_s,
        max_link_utilization=float(busy.max(initial=0.0)),
        events=run.events,
        fidelity="packet",
        packet=packet,
        **_healthy_keys(failures, healthy, flows, topo.line_rate_Bps),
    )
    names = [f"{a}->{b}" for a, b in zip(failed.link_src.tolist(), failed.link_dst.tolist(), strict=True)]
    return PacketTraffic(result, run, names)
