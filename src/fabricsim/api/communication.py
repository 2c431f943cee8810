"""Collectives and traffic patterns on a fabric (public API, layer L9)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fabricsim import catalog, collectives
from fabricsim.api.topologies import build_topology
from fabricsim.api.traffic_inputs import failed_topology, failure_count, matrix_flows
from fabricsim.errors import FabricsimError
from fabricsim.limits import cap, cap_hint, check_cap
from fabricsim.metrics import (
    CollectiveResult,
    TrafficResult,
)
from fabricsim.network.base import FlowSet
from fabricsim.network.flow import FlowNetwork
from fabricsim.network.patterns import flow_count, host_throughput_fraction, parse_pattern, pattern_flows
from fabricsim.specs.inputs import Count, Fraction, Gpus, NonNegative, Seed, edge
from fabricsim.topology.graph import Topology
from fabricsim.topology.routing import Routing, parse_routing, route_table
from fabricsim.units import parse_size, to_GBps

Progress = Callable[[int, int], None] | None  # on_progress(done, total)


@edge
def collective(op: str, *, system: str, gpus: Gpus, size: str | int, algorithm: str = "auto") -> CollectiveResult:
    """Estimate one collective on ``gpus`` GPUs of ``system``.

    ``size`` is S as nccl-tests defines it per op (e.g. the full gathered buffer for all-gather);
    algbw = S / time and busbw = algbw x the nccl-tests bus factor of the op.
    """
    spec = catalog.load_system(system)
    spec.check_gpu_count(gpus)
    operation = collectives.parse_op(op)
    algo = collectives.parse_algorithm(algorithm)
    size_bytes = message_size(size)
    group = collectives.place_group(spec, gpus)
    est = collectives.estimate(operation, size_bytes, group, algo)
    algbw = size_bytes / est.time_s
    return CollectiveResult(
        op=operation.value,
        gpus=gpus,
        size_bytes=size_bytes,
        algorithm=est.algorithm.value,
        protocol=est.protocol,
        time_s=est.time_s,
        algbw_GBps=to_GBps(algbw),
        busbw_GBps=to_GBps(algbw * collectives.bus_factor(operation, gpus)),
    )


def collective_op(name: str) -> str:
    """The canonical name of a collective op (``allreduce`` -> ``all-reduce``), with did-you-mean."""
    return collectives.parse_op(name).value


def message_size(size: str | int) -> int:
    """Bytes of one message or flow: a size string or number, at least 1 byte, at most the cap."""
    size_bytes = parse_size(size, "size")
    if size_bytes == 0:
        raise FabricsimError("size", "must be at least 1 byte", "e.g. --size 1MiB")
    check_cap("size", size_bytes, "SIZE_BYTES")
    return size_bytes


def check_simulated_flows(pattern: str, flows: int, hosts: int) -> None:
    """Refuse a flow-fidelity run of more flows than the ``SIMULATED_FLOWS`` cap (it would run for
    minutes), naming the pattern, the cap, the variable that raises it and fewer ``--hosts``."""
    limit = cap("SIMULATED_FLOWS")
    if flows > limit:
        fix = f"use fewer --hosts (it has {hosts}), or {cap_hint('SIMULATED_FLOWS')}"
        raise FabricsimError(f"{pattern} flows", f"{flows} exceed the flow fidelity's cap {limit}", fix)


@dataclass(frozen=True, slots=True)
class _Run:
    """One pattern run: per-sender throughput fraction, completion (s), peak utilization, events."""

    fraction: np.ndarray
    completion_time_s: float
    max_link_utilization: float
    events: int


def _run_pattern(topo: Topology, flows: FlowSet, policy: Routing, seed: int, on_progress: Progress) -> _Run:
    result = FlowNetwork(route_table(topo), policy, seed, on_progress).run(flows)
    fraction = host_throughput_fraction(flows, result.finish_s, topo.line_rate_Bps)
    peak = float(result.peak_utilization.max(initial=0.0))
    return _Run(fraction, result.completion_time_s, peak, result.events)


def traffic_flows(pattern: str | None, matrix: str | None, hosts: int, size: str | int, seed: int):
    """(flows, pattern name, bytes per flow) of a synthetic ``pattern`` over ``hosts`` hosts, or of
    the traffic-matrix file ``matrix`` (its name ``matrix``, its mean flow size); exactly one of them."""
    if matrix is not None:
        flows = matrix_flows(matrix, hosts)
        if pattern is not None:
            raise FabricsimError("matrix", "a matrix file replaces PATTERN", "give PATTERN or --matrix FILE, not both")
        return flows, "matrix", int(np.ceil(flows.size_bytes.mean()))
    if pattern is None:
        raise FabricsimError("pattern", "is missing", "give PATTERN (e.g. permutation) or --matrix FILE")
    kind = parse_pattern(pattern)
    size_bytes = message_size(size)
    check_cap(f"{kind.value} flows", flow_count(kind, hosts), "FLOWS")
    return pattern_flows(kind, hosts, float(size_bytes), seed), kind.value, size_bytes


@edge
def traffic(
    pattern: str | None,
    *,
    topology: str,
    routing: str = "ecmp",
    seed: Seed = 0,
    size: str | int = "64MiB",
    hosts: Count("HOSTS") | None = None,
    fail_links: NonNegative("FLOWS") = 0,
    fail_fraction: Fraction = 0.0,
    matrix: str | None = None,
    on_progress: Progress = None,
) -> TrafficResult:
    """Run a synthetic traffic ``pattern`` (permutation | all-to-all | incast | ring) on ``topology``
    (builder string or catalog system) with the max-min flow model; every flow carries ``size``
    bytes and starts at t = 0. ``hosts`` uses only the first hosts (default: all).

    Failures: ``fail_links`` fabric cables (switch/NIC to switch, both directions; see
    :func:`fabricsim.topology.graph.fabric_cables`), or ``fail_fraction`` of them, drawn with
    ``seed``, are removed; routing uses the remaining equal-cost shortest paths, and the healthy
    run is reported alongside. A flow left without a path is an error (field ``fail-links``).
    ``on_progress(done, total)`` reports the flows finished (per run: healthy, then failed).
    ``matrix``: a traffic-matrix file (CSV or JSON Lines: src, dst, bytes, start_s) instead of
    ``pattern`` and ``size`` (:mod:`fabricsim.network.matrix`); its hosts are the first ``hosts``.
    """
    policy = parse_routing(routing)
    topo = build_topology(topology)
    count = topo.hosts if hosts is None else hosts
    if count > topo.hosts:
        problem = f"pattern needs {count} hosts, {topology} has {topo.hosts}"
        raise FabricsimError("hosts", problem, f"use --hosts <= {topo.hosts}")
    flows, name, size_bytes = traffic_flows(pattern, matrix, count, size, seed)
    check_simulated_flows(name, flows.count, count)
    failures = failure_count(topo, fail_links, fail_fraction)
    failed = failed_topology(topo, flows, failures, seed) if failures else topo
    healthy = _run_pattern(topo, flows, policy, seed, on_progress)
    run = _run_pattern(failed, flows, policy, seed, on_progress) if failures else healthy
    return TrafficResult(
        pattern=name,
        topology=topology,
        routing=policy.value,
        seed=seed,
        hosts=count,
        flows=flows.count,
        size_bytes=size_bytes,
        throughput_mean=float(run.fraction.mean()),
        throughput_p1=float(np.percentile(run.fraction, 1)),
        throughput_min=float(run.fraction.min()),
        completion_time_s=run.completion_time_s,
        max_link_utilization=run.max_link_utilization,
        events=run.events,
        failed_links=failures,
        healthy_throughput_mean=float(healthy.fraction.mean()) if failures else None,
        healthy_completion_time_s=healthy.completion_time_s if failures else None,
    )
