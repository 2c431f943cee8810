"""Communication timers backed by a flow-level network model (layer L6).

A :class:`FlowTimer` times one :class:`~fabricsim.workload.graph.CommPayload` on the full topology of
the system (``topology.system``) with the max-min fair flow model (``network.flow``) and a routing
policy (ECMP with a hash seed, spraying, adaptive). Contention is what this fidelity adds, so a
payload is timed with **every group of its shape active at once**: the GPUs are tiled into groups
of ``group_gpus`` ranks at ``group_stride`` (Megatron's rank order makes the TP, DP, EP and PP
groups exactly such tilings), as when all data-parallel groups reduce their gradients together
at the end of a step or all stages pass activations in the steady state of the pipeline.

Traffic per group is the collective's bandwidth term as one step, built by the collective
schedules (:func:`fabricsim.collectives.schedules.bandwidth_step`): each rank sends
``size x bus_factor`` bytes (nccl-tests' bus bandwidth definition) to its successors on NCCL-like
channel rings (all-reduce, all-gather, reduce-scatter, broadcast, reduce); all-to-all sends
``size / n`` to every other rank; send-recv one ``size`` flow. The time is the last flow's finish (path latency
included once), i.e. the step-by-step latency terms of the algorithm are left out; at the message
sizes of training steps (MB to GB) they are below 1%.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fabricsim.collectives import parse_op
from fabricsim.collectives.schedules import bandwidth_step
from fabricsim.network.base import FlowSet, make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.specs import SystemSpec
from fabricsim.topology.routing import RouteTable, Routing, route_table
from fabricsim.topology.system import build_system_topology
from fabricsim.workload.graph import CommPayload


def tiled_groups(gpus: int, ranks: int, stride: int) -> np.ndarray:
    """GPU ids of every group of ``ranks`` at ``stride`` tiling ``gpus`` GPUs: array [groups, ranks].

    GPU g belongs to the group starting at (g // (ranks·stride))·ranks·stride + g mod stride.
    """
    block = ranks * stride
    if gpus % block:
        gpus -= gpus % block  # a ragged tail does not form a full group
    base = np.arange(gpus).reshape(-1, ranks, stride)  # [blocks, rank, offset]
    return base.transpose(0, 2, 1).reshape(-1, ranks)


def payload_flows(payload: CommPayload, groups: np.ndarray, per_domain: int = 1) -> FlowSet:
    """The flows of ``payload`` run by every group in ``groups`` at once: the collective's
    :func:`~fabricsim.collectives.schedules.bandwidth_step` (NCCL-like channel rings, ``per_domain``
    ranks of a group per scale-up domain), ranks being GPU ids."""
    step = bandwidth_step(parse_op(payload.collective), groups, payload.size_bytes, per_domain)
    return make_flows(step.src, step.dst, step.size_bytes)


class FlowTimer:
    """Times payloads on ``gpus`` GPUs of ``system`` with the flow model (state: route table and a
    cache per payload; building the table costs O(anchors x links) once)."""

    def __init__(self, system: SystemSpec, gpus: int, routing: Routing = Routing.ECMP, seed: int = 0) -> None:
        self.gpus = gpus
        self.domain_gpus = system.scale_up.domain_gpus
        self.table: RouteTable = route_table(build_system_topology(system, gpus))
        self.network = FlowNetwork(self.table, routing, seed)
        self._cache: dict[CommPayload, float] = {}

    def with_routing(self, routing: Routing, seed: int) -> FlowTimer:
        """A timer on the same topology with another routing policy or hash seed (table shared)."""
        other = object.__new__(FlowTimer)
        other.gpus, other.table, other.domain_gpus = self.gpus, self.table, self.domain_gpus
        other.network = FlowNetwork(self.table, routing, seed)
        other._cache = {}
        return other

    def __call__(self, payload: CommPayload) -> float:
        if payload not in self._cache:
            if payload.group_gpus * payload.group_stride > self.gpus or payload.group_gpus < 2:
                self._cache[payload] = 0.0
            else:
                groups = tiled_groups(self.gpus, payload.group_gpus, payload.group_stride)
                per_domain = int(np.count_nonzero(groups[0] // self.domain_gpus == groups[0, 0] // self.domain_gpus))
                result = self.network.run(payload_flows(payload, groups, per_domain))
                self._cache[payload] = result.completion_time_s
        return self._cache[payload]


def flow_timers(
    system: SystemSpec, gpus: int, ecmp_rehash: bool = False, seed: int = 0
) -> Callable[[int | None], FlowTimer]:
    """A timer factory for :func:`fabricsim.engine.variability.monte_carlo` and the simulators.

    Without re-hashing every run uses ECMP with hash ``seed``. With re-hashing, the nominal
    (no-variability) timer sprays every flow over its equal-cost paths (no collisions) and run
    ``k`` hashes ECMP with seed ``k``: collisions are the variability.
    """
    base = FlowTimer(system, gpus, Routing.ECMP, seed)
    nominal = base.with_routing(Routing.SPRAY, 0) if ecmp_rehash else base
    runs: dict[int, FlowTimer] = {}

    def timer(run_seed: int | None) -> FlowTimer:
        if run_seed is None or not ecmp_rehash:
            return nominal
        if run_seed not in runs:
            runs[run_seed] = base.with_routing(Routing.ECMP, run_seed)
        return runs[run_seed]

    return timer
