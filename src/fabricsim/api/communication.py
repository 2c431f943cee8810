"""Collectives and traffic patterns on a fabric (public API, layer L9)."""

from __future__ import annotations

import numpy as np

from fabricsim import catalog, collectives
from fabricsim.errors import FabricsimError
from fabricsim.metrics import (
    CollectiveResult,
    TrafficResult,
)
from fabricsim.network.flow import FlowNetwork
from fabricsim.network.patterns import host_throughput_fraction, parse_pattern, pattern_flows
from fabricsim.topology.parse import parse_topology
from fabricsim.topology.routing import parse_routing, route_table
from fabricsim.units import parse_size, to_GBps


def collective(op: str, *, system: str, gpus: int, size: str | int, algorithm: str = "auto") -> CollectiveResult:
    """Estimate one collective on ``gpus`` GPUs of ``system``.

    ``size`` is S as nccl-tests defines it per op (e.g. the full gathered buffer for all-gather);
    algbw = S / time and busbw = algbw x the nccl-tests bus factor of the op.
    """
    spec = catalog.load_system(system)
    spec.check_gpu_count(gpus)
    operation = collectives.parse_op(op)
    algo = collectives.parse_algorithm(algorithm)
    size_bytes = parse_size(size, "size")
    if size_bytes == 0:
        raise FabricsimError("size", "must be at least 1 byte", "e.g. --size 1MiB")
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


def traffic(
    pattern: str,
    *,
    topology: str,
    routing: str = "ecmp",
    seed: int = 0,
    size: str | int = "64MiB",
    hosts: int | None = None,
) -> TrafficResult:
    """Run a synthetic traffic ``pattern`` (permutation | all-to-all | incast | ring) on ``topology``
    (builder string or catalog system) with the max-min flow model; every flow carries ``size``
    bytes and starts at t = 0. ``hosts`` uses only the first hosts (default: all)."""
    kind = parse_pattern(pattern)
    policy = parse_routing(routing)
    size_bytes = parse_size(size, "size")
    topo = parse_topology(topology)
    count = topo.hosts if hosts is None else hosts
    if count > topo.hosts:
        problem = f"pattern needs {count} hosts, {topology} has {topo.hosts}"
        raise FabricsimError("hosts", problem, f"use --hosts <= {topo.hosts}")
    flows = pattern_flows(kind, count, float(size_bytes), seed)
    result = FlowNetwork(route_table(topo), policy, seed).run(flows)
    fraction = host_throughput_fraction(flows, result.finish_s, topo.line_rate_Bps)
    return TrafficResult(
        pattern=kind.value,
        topology=topology,
        routing=policy.value,
        seed=seed,
        hosts=count,
        flows=flows.count,
        size_bytes=size_bytes,
        throughput_mean=float(fraction.mean()),
        throughput_p1=float(np.percentile(fraction, 1)),
        throughput_min=float(fraction.min()),
        completion_time_s=result.completion_time_s,
        max_link_utilization=float(result.peak_utilization.max(initial=0.0)),
        events=result.events,
    )
