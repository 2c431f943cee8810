"""An MoE all-to-all on rail-optimized vs rail-only fabrics, timed by the flow model (layer L8).

Every GPU sends ``size_bytes`` to every GPU of every other scale-up domain (one NIC per GPU,
NIC r of a domain on rail r; ``RailSpec.nodes`` counts domains, ``RailSpec.rails`` their GPUs).
Rail-optimized: one flow per pair straight through the any-to-any Clos. Rail-only (Wang et al.,
arXiv 2307.12169, forwarding through the scale-up domain): first each GPU hands GPU r of its
domain, over NVLink, the data bound for rail r of every other domain ((domains - 1) x size per
pair, timed on one NVSwitch domain); then NIC r sends each other domain's NIC r the
``rails`` x size gathered for it, on rail r. The two phases run back to back (no
pipelining), so the forward phase is the whole overhead. Flows are sprayed over equal-cost paths
(adaptive routing), so hash collisions do not blur the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.network.base import make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.builders import LinkParams, RailSpec, nvswitch_domain, rail_optimized
from fabricsim.topology.rail_only import rail_only
from fabricsim.topology.routing import Routing, route_table


@dataclass(frozen=True, slots=True)
class AllToAllTimes:
    rail_optimized_s: float
    forward_s: float
    rail_s: float

    @property
    def rail_only_s(self) -> float:
        return self.forward_s + self.rail_s


def _pairs(nodes: int, rails: int, same_rail: bool) -> tuple[np.ndarray, np.ndarray]:
    ids = np.arange(nodes * rails)
    src, dst = np.meshgrid(ids, ids, indexing="ij")
    keep = (src // rails) != (dst // rails)
    if same_rail:
        keep &= (src % rails) == (dst % rails)
    return src[keep], dst[keep]


def _completion(topology, src: np.ndarray, dst: np.ndarray, size_bytes: float) -> float:
    network = FlowNetwork(route_table(topology), Routing.SPRAY, 0)
    return float(network.run(make_flows(src, dst, size_bytes)).completion_time_s)


def moe_all_to_all(spec: RailSpec, nvlink: LinkParams, size_bytes: float) -> AllToAllTimes:
    """Completion times (s) of the all-to-all on both fabrics; ``spec.rails`` GPUs per domain."""
    direct = _completion(rail_optimized(spec), *_pairs(spec.nodes, spec.rails, False), size_bytes)
    domain = nvswitch_domain(spec.rails, nvlink)
    local = np.arange(spec.rails)
    src, dst = np.meshgrid(local, local, indexing="ij")
    off = src != dst
    forward = _completion(domain, src[off], dst[off], (spec.nodes - 1) * size_bytes)
    rails = _completion(rail_only(spec), *_pairs(spec.nodes, spec.rails, True), spec.rails * size_bytes)
    return AllToAllTimes(direct, forward, rails)
