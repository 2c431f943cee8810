"""Flow-level network model: max-min fair sharing, event-driven (layer L3).

Rates are the max-min fair allocation (Bertsekas & Gallager, *Data Networks*, 2nd ed., sec. 6.5.2)
computed by progressive filling over the sparse links x flows share matrix A (A[l, f] = share of
flow f on link l; 1 on a single path, fractions when sprayed): raise every unfrozen flow's rate by
the largest step some link allows, freeze the flows of the links that saturate, repeat. Each
iteration costs two sparse mat-vecs; iterations = distinct bottleneck levels.

The event loop recomputes the allocation at every flow arrival and finish. Flows whose finish lies
within ``FINISH_TOLERANCE`` (relative) of the next finish are retired together, which collapses
the many equal-rate finishes of symmetric patterns into one event; their few leftover bytes are
booked in that interval. A flow's finish is its last byte's transmission plus its path latency.
A flow with an empty path (src == dst) crosses no link: it completes at its start time, with an
infinite first rate and no bytes booked on any link.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from fabricsim.network.base import FlowSet, NetworkResult
from fabricsim.topology.routing import FlowEnds, Routes, RouteTable, Routing, route

FINISH_TOLERANCE = 1e-9  # relative: a numerical grouping width, not a model constant
_SATURATED = 1e-9  # residual capacity (relative) below which a link is a bottleneck


def _ranges(indptr: np.ndarray, picked: np.ndarray) -> np.ndarray:
    """Positions of the stored entries of rows (or columns) ``picked`` of a compressed matrix."""
    starts = indptr[picked]
    lengths = indptr[picked + 1] - starts
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return offsets + np.arange(int(lengths.sum()))


def max_min_rates(incidence: sp.spmatrix, capacity_Bps: np.ndarray) -> np.ndarray:
    """Max-min fair rate (bytes/s) of each column of ``incidence`` by progressive filling.

    All unfrozen flows share one fill level; each iteration raises it to the next link
    saturation, freezes the flows crossing saturated links (gathered from those links' rows) and
    removes their load incrementally, so the whole solve costs O(nnz + levels x links).
    Columns with no links (src == dst) get an infinite rate.
    """
    rows = incidence.tocsr()
    cols = incidence.tocsc()
    links = capacity_Bps.size
    rate = np.full(incidence.shape[1], np.inf)
    unfrozen = np.diff(cols.indptr) > 0
    load = np.bincount(np.repeat(np.arange(links), np.diff(rows.indptr)), rows.data, links)
    crossing = np.diff(rows.indptr).astype(np.int64)  # unfrozen flows per link
    residual = capacity_Bps.astype(float).copy()
    level = 0.0
    while True:
        used = np.flatnonzero(crossing > 0)
        if used.size == 0:
            return rate
        step = max(0.0, float(np.min(residual[used] / load[used])))
        level += step
        residual[used] -= step * load[used]
        saturated = used[residual[used] <= _SATURATED * capacity_Bps[used]]
        hit_flows = rows.indices[_ranges(rows.indptr, saturated)]
        newly = hit_flows[unfrozen[hit_flows]]
        if newly.size > 1:
            newly = np.unique(newly)
        unfrozen[newly] = False
        rate[newly] = level
        entries = _ranges(cols.indptr, newly)
        hit = cols.indices[entries]
        load -= np.bincount(hit, cols.data[entries], links)
        crossing -= np.bincount(hit, minlength=links)
        load[crossing == 0] = 0.0


@dataclass
class _State:
    """Mutable event-loop state (private to :class:`FlowNetwork.run`)."""

    remaining: np.ndarray
    done_s: np.ndarray
    first_rate: np.ndarray
    link_bytes: np.ndarray
    peak: np.ndarray
    pathless: np.ndarray  # flows whose route crosses no link (src == dst)


class FlowNetwork:
    """:class:`~fabricsim.network.base.NetworkModel`: max-min fair flows, event-driven."""

    fidelity = "flow"

    def __init__(self, table: RouteTable, routing: Routing = Routing.ECMP, seed: int = 0) -> None:
        self.table = table
        self.routing = routing
        self.seed = seed

    def routes(self, flows: FlowSet) -> Routes:
        return route(self.table, FlowEnds(flows.src, flows.dst, flows.start_s, flows.label), self.routing, self.seed)

    def run(self, flows: FlowSet) -> NetworkResult:
        routes = self.routes(flows)
        return simulate(routes, self.table.topology.capacity_Bps, flows)


def simulate(routes: Routes, capacity_Bps: np.ndarray, flows: FlowSet) -> NetworkResult:
    """Event-driven max-min simulation of ``flows`` on precomputed ``routes``."""
    matrix = routes.incidence.tocsc()
    state = _State(
        flows.size_bytes.astype(float).copy(),
        np.full(flows.count, np.nan),
        np.full(flows.count, np.nan),
        np.zeros(capacity_Bps.size),
        np.zeros(capacity_Bps.size),
        np.diff(matrix.indptr) == 0,
    )
    order = np.lexsort((np.arange(flows.count), flows.start_s))
    arrivals = flows.start_s[order]
    now, next_arrival, events = 0.0, 0, 0
    active = np.zeros(0, dtype=np.int64)
    while next_arrival < flows.count or active.size:
        if active.size == 0:
            now = max(now, arrivals[next_arrival])
        upto = np.searchsorted(arrivals, now, side="right")
        active = np.concatenate([active, order[next_arrival:upto]])
        next_arrival = upto
        active = _retire_empty(active, state, now)
        if active.size == 0:
            continue
        horizon = arrivals[next_arrival] - now if next_arrival < flows.count else np.inf
        active, now = _advance(matrix, capacity_Bps, active, state, (now, horizon))
        events += 1
    finish = state.done_s + routes.latency_s
    return NetworkResult(finish, state.first_rate, state.link_bytes, state.peak, events, "flow")


def _retire_empty(active: np.ndarray, state: _State, now: float) -> np.ndarray:
    """Complete at ``now`` the arrived flows with no bytes left or no link to cross."""
    empty = (state.remaining[active] <= 0) | state.pathless[active]
    state.remaining[active[empty]] = 0.0
    state.done_s[active[empty]] = now
    state.first_rate[active[empty]] = np.where(
        np.isnan(state.first_rate[active[empty]]), np.inf, state.first_rate[active[empty]]
    )
    return active[~empty]


def _advance(
    matrix: sp.csc_matrix, capacity: np.ndarray, active: np.ndarray, state: _State, clock: tuple[float, float]
) -> tuple[np.ndarray, float]:
    """Allocate rates to ``active``, run to the next finish or arrival; return survivors and time."""
    now, horizon = clock
    sub = matrix[:, active]
    rate = max_min_rates(sub, capacity)
    fresh = np.isnan(state.first_rate[active])
    state.first_rate[active[fresh]] = rate[fresh]
    with np.errstate(divide="ignore"):
        left_s = state.remaining[active] / rate
    step = min(float(left_s.min()), horizon)
    finishing = left_s <= step * (1 + FINISH_TOLERANCE)
    finite = np.isfinite(rate)
    sent = np.where(finishing, state.remaining[active], rate * step if np.isfinite(step) else 0.0)
    state.remaining[active] -= sent
    state.link_bytes += sub @ sent
    if step > 0:
        state.peak = np.maximum(state.peak, (sub @ np.where(finite, rate, 0.0)) / capacity)
    state.done_s[active[finishing]] = now + np.where(np.isfinite(left_s[finishing]), left_s[finishing], 0.0)
    return active[~finishing], now + step
