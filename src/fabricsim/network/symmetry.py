"""Exact aggregation of symmetric flows (layer L3): one column per (source leaf, destination leaf).

When every endpoint hangs off one leaf by one link, routing is spraying (no hash), and the flow set
holds, for each pair of leaves (A, B), *all* host pairs a in A, b in B (a != b) with one size and
start, then swapping two hosts of one leaf maps topology, routes and traffic onto themselves. The
max-min allocation is unique, hence invariant: all flows of a leaf pair have equal rates at every
instant. So the class can be simulated as one column, the sum of its members' columns, with
per-member bytes. The sum needs no per-member routing: members share the leaf-to-leaf part (the
representative's sprayed route without its host links, times the member count) and each member
adds its own two host links. All-to-all on 512 hosts (261,632 flows) becomes (512/H)^2 classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fabricsim.errors import FabricsimError
from fabricsim.network.base import FlowSet, NetworkResult, make_flows
from fabricsim.network.flow import simulate
from fabricsim.topology.routing import FlowEnds, Routes, RouteTable, Routing, route


@dataclass(frozen=True, slots=True)
class LeafClasses:
    """``representative`` flows (one per class), ``members`` per class, and ``class_of`` each flow."""

    representative: FlowSet
    members: np.ndarray
    class_of: np.ndarray


def _host_links(table: RouteTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each endpoint's single up link, down link and leaf; raises if an endpoint has other links."""
    topo = table.topology
    is_end = np.zeros(topo.nodes, dtype=bool)
    is_end[topo.endpoints] = True
    index = np.full(topo.nodes, -1)
    index[topo.endpoints] = np.arange(topo.hosts)
    up_ids = np.flatnonzero(is_end[topo.link_src])
    down_ids = np.flatnonzero(is_end[topo.link_dst])
    if up_ids.size != topo.hosts or down_ids.size != topo.hosts:
        raise FabricsimError("topology", "symmetric aggregation needs one link per endpoint", "run without it")
    up, down = np.empty(topo.hosts, np.int64), np.empty(topo.hosts, np.int64)
    up[index[topo.link_src[up_ids]]] = up_ids
    down[index[topo.link_dst[down_ids]]] = down_ids
    return up, down, topo.link_dst[up]


def leaf_classes(table: RouteTable, flows: FlowSet) -> LeafClasses:
    """Group flows by (source leaf, destination leaf); check each class is complete and uniform."""
    _, _, leaf = _host_links(table)
    leaves, leaf_index = np.unique(leaf, return_inverse=True)
    per_leaf = np.bincount(leaf_index, minlength=leaves.size)
    key = leaf_index[flows.src] * leaves.size + leaf_index[flows.dst]
    classes, first, class_of, members = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    a, b = np.divmod(classes, leaves.size)
    complete = per_leaf[a] * per_leaf[b] - np.where(a == b, per_leaf[a], 0)
    distinct = np.unique(flows.src * table.topology.hosts + flows.dst).size == flows.count
    class_of = class_of.ravel()
    uniform = all(np.array_equal(x, x[first][class_of]) for x in (flows.size_bytes, flows.start_s))
    if not (distinct and np.array_equal(members, complete) and uniform):
        raise FabricsimError("flows", "not symmetric: each leaf pair needs all its host pairs, one size and start")
    rep = make_flows(flows.src[first], flows.dst[first], flows.size_bytes[first], flows.start_s[first])
    return LeafClasses(rep, members, class_of)


def class_routes(table: RouteTable, classes: LeafClasses, flows: FlowSet) -> Routes:
    """Summed sprayed columns per class (see module docstring); latency of the representative."""
    up, down, _ = _host_links(table)
    rep = classes.representative
    single = route(table, FlowEnds(rep.src, rep.dst, rep.start_s, rep.label), Routing.SPRAY, 0)
    core = single.incidence.tocoo()
    inner = ~np.isin(core.row, np.concatenate([up[rep.src], down[rep.dst]]))
    shape = single.incidence.shape
    rows = np.concatenate([core.row[inner], up[flows.src], down[flows.dst]])
    cols = np.concatenate([core.col[inner], classes.class_of, classes.class_of])
    data = np.concatenate([core.data[inner] * classes.members[core.col[inner]], np.ones(2 * flows.count)])
    return Routes(sp.csr_matrix((data, (rows, cols)), shape=shape), single.latency_s)


def simulate_symmetric(table: RouteTable, flows: FlowSet) -> tuple[NetworkResult, LeafClasses]:
    """Sprayed max-min simulation of a symmetric flow set, one column per leaf pair; per-flow finish."""
    classes = leaf_classes(table, flows)
    routes = class_routes(table, classes, flows)
    result = simulate(routes, table.topology.capacity_Bps, classes.representative)
    expanded = NetworkResult(
        result.finish_s[classes.class_of],
        result.first_rate_Bps[classes.class_of],
        result.link_bytes,
        result.peak_utilization,
        result.events,
        "flow (leaf-pair symmetry)",
    )
    return expanded, classes
