"""Alpha-beta network model without contention (layer L3).

Each flow alone on its routed path: finish = start + path latency + bytes / bottleneck, where the
bottleneck is min over the flow's links of capacity / share (share < 1 on sprayed paths). This is
Hockney's alpha-beta model (Parallel Computing 20, 1994) with alpha = path latency and
1/beta = the path's bottleneck bandwidth. Flows never slow each other down.
"""

from __future__ import annotations

import numpy as np

from fabricsim.network.base import FlowSet, NetworkResult
from fabricsim.topology.routing import FlowEnds, RouteTable, Routing, route


class AnalyticNetwork:
    """:class:`~fabricsim.network.base.NetworkModel` with alpha-beta per flow and no contention."""

    fidelity = "analytic"

    def __init__(self, table: RouteTable, routing: Routing = Routing.ECMP, seed: int = 0) -> None:
        self.table = table
        self.routing = routing
        self.seed = seed

    def run(self, flows: FlowSet) -> NetworkResult:
        ends = FlowEnds(flows.src, flows.dst, flows.start_s, flows.label)
        routes = route(self.table, ends, self.routing, self.seed)
        incidence = routes.incidence.tocsc()
        capacity = self.table.topology.capacity_Bps
        rate = np.full(flows.count, np.inf)
        routed = np.diff(incidence.indptr) > 0
        if routed.any():  # bottleneck = 1 / max over the flow's links of share / capacity
            per_byte = incidence.data / capacity[incidence.indices]
            rate[routed] = 1.0 / np.maximum.reduceat(per_byte, incidence.indptr[:-1][routed])
        transfer = np.divide(flows.size_bytes, rate, out=np.zeros(flows.count), where=np.isfinite(rate))
        link_bytes = incidence @ flows.size_bytes
        peak = (incidence @ np.where(np.isfinite(rate), rate, 0.0)) / capacity
        return NetworkResult(flows.start_s + routes.latency_s + transfer, rate, link_bytes, peak, 1, self.fidelity)
