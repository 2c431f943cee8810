"""Flow-level network model: max-min fair sharing, event-driven (layer L3).

Rates are the max-min fair allocation (Bertsekas & Gallager, *Data Networks*, 2nd ed., sec. 6.5.2)
computed by progressive filling over the sparse links x flows share matrix A (A[l, f] = share of
flow f on link l; 1 on a single path, fractions when sprayed): raise every unfrozen flow's rate by
the largest step some link allows, freeze the flows of the links that saturate, repeat. Each
iteration works on the links unfrozen flows still cross and updates only the links of the flows
it freezes; iterations = distinct bottleneck levels.

The event loop recomputes the allocation at every flow arrival and finish. Flows whose finish lies
within ``FINISH_TOLERANCE`` (relative) of the next finish are retired together, which collapses
the many equal-rate finishes of symmetric patterns into one event; their few leftover bytes are
booked in that interval. A flow's finish is its last byte's transmission plus its path latency.
A flow with an empty path (src == dst) crosses no link: it completes at its start time, with an
infinite first rate and no bytes booked on any link.
"""

from __future__ import annotations

from collections.abc import Callable
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
    removes their load incrementally. The iterations run over a working set of the links that
    unfrozen flows cross; a link left with none drops out (its ratio becomes +inf, and the set is
    compacted once a quarter of it is dead), so the solve costs O(nnz + sum over levels of the
    links still in use) rather than levels x links. Columns with no links (src == dst) get an
    infinite rate.
    """
    rows = incidence.tocsr()
    cols = incidence.tocsc()
    rate = np.full(incidence.shape[1], np.inf)
    unfrozen = np.diff(cols.indptr) > 0
    work = _LinkSet(rows, capacity_Bps)
    level = 0.0
    while work.live:
        step = max(0.0, float(np.min(work.residual / work.load)))
        level += step
        work.residual -= step * work.load
        saturated = work.links[work.residual <= work.floor]
        hit_flows = rows.indices[_ranges(rows.indptr, saturated)]
        newly = hit_flows[unfrozen[hit_flows]]
        if newly.size > 1:  # sorted, each once (np.unique, without its hash table per call)
            newly = np.sort(newly)
            newly = newly[np.concatenate(([True], newly[1:] != newly[:-1]))]
        unfrozen[newly] = False
        rate[newly] = level
        entries = _ranges(cols.indptr, newly)
        work.remove(cols.indices[entries], cols.data[entries])
    return rate


class _LinkSet:
    """The links unfrozen flows still cross, as aligned arrays (state of :func:`max_min_rates`).

    ``load`` is the summed share of the unfrozen flows, ``crossing`` their count, ``residual``
    the capacity left at the current fill level, ``floor`` the residual at which a link counts
    as saturated. A link whose ``crossing`` falls to 0 is dead: residual +inf, load 1, so it is
    never the next step nor saturated; :meth:`remove` compacts the arrays once a quarter is dead.
    The arithmetic on live links is the same, operation for operation, as on the full link arrays.
    """

    def __init__(self, rows: sp.csr_matrix, capacity_Bps: np.ndarray) -> None:
        per_link = np.diff(rows.indptr)
        self.links = np.flatnonzero(per_link > 0)
        self.load = np.bincount(np.repeat(np.arange(self.links.size), per_link[self.links]), rows.data)
        self.crossing = per_link[self.links].astype(np.int64)
        self.residual = capacity_Bps[self.links].astype(float)
        self.floor = _SATURATED * capacity_Bps[self.links]
        self.position = np.full(per_link.size, -1, dtype=np.int64)  # link id -> index in the set
        self.position[self.links] = np.arange(self.links.size)
        self.live = self.links.size

    def remove(self, link: np.ndarray, share: np.ndarray) -> None:
        """Take the entries (``link[i]``, ``share[i]``) of freezing flows off their links' load.

        Each link's shares are summed in entry order and subtracted once, as one bincount over
        all links does (the same floating-point result): by a bincount over the set when the
        entries are many, else over the touched links only (found by a stable sort)."""
        if link.size == 0:
            return
        at = self.position[link]
        if 8 * at.size > self.links.size:
            counts = np.bincount(at, minlength=self.links.size)
            touched = np.flatnonzero(counts)
            self.load[touched] -= np.bincount(at, share, self.links.size)[touched]
            self.crossing[touched] -= counts[touched]
        else:
            order = np.argsort(at, kind="stable")
            ordered = at[order]
            first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
            touched = ordered[first]
            group = np.empty(at.size, dtype=np.int64)
            group[order] = np.cumsum(first) - 1
            self.load[touched] -= np.bincount(group, share, touched.size)
            self.crossing[touched] -= np.bincount(group, minlength=touched.size)
        dead = touched[self.crossing[touched] == 0]
        if dead.size == 0:
            return
        self.residual[dead], self.load[dead] = np.inf, 1.0
        self.live -= dead.size
        if 4 * self.live <= 3 * self.links.size:
            keep = self.crossing > 0
            for name in ("links", "load", "crossing", "residual", "floor"):
                setattr(self, name, getattr(self, name)[keep])
            self.position[self.links] = np.arange(self.links.size)


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

    def __init__(
        self,
        table: RouteTable,
        routing: Routing = Routing.ECMP,
        seed: int = 0,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.table = table
        self.routing = routing
        self.seed = seed
        self.on_progress = on_progress  # (flows done, flows) after each event, for a progress bar

    def routes(self, flows: FlowSet) -> Routes:
        return route(self.table, FlowEnds(flows.src, flows.dst, flows.start_s, flows.label), self.routing, self.seed)

    def run(self, flows: FlowSet) -> NetworkResult:
        return self.run_routed(flows, self.routes(flows))

    def run_routed(self, flows: FlowSet, routes: Routes) -> NetworkResult:
        """:meth:`run` on routes found before (e.g. cached per collective)."""
        return simulate(routes, self.table.topology.capacity_Bps, flows, self.on_progress)


def simulate(
    routes: Routes, capacity_Bps: np.ndarray, flows: FlowSet, on_progress: Callable[[int, int], None] | None = None
) -> NetworkResult:
    """Event-driven max-min simulation of ``flows`` on precomputed ``routes``; ``on_progress(done,
    total)`` is called with the flows finished after each event."""
    links = capacity_Bps.size
    matrix, capacity_Bps = _with_rate_caps(routes.incidence, capacity_Bps, flows.max_rate_Bps)
    state = _State(
        flows.size_bytes.astype(float).copy(),
        np.full(flows.count, np.nan),
        np.full(flows.count, np.nan),
        np.zeros(capacity_Bps.size),
        np.zeros(capacity_Bps.size),
        np.diff(routes.incidence.tocsc().indptr) == 0,
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
        if next_arrival >= flows.count and not np.isfinite(state.remaining[active]).any():
            break  # nothing left but rate-capped endless flows (a background tenant)
        if active.size == 0:
            continue
        horizon = arrivals[next_arrival] - now if next_arrival < flows.count else np.inf
        active, now = _advance(matrix, capacity_Bps, active, state, (now, horizon))
        events += 1
        if on_progress is not None:
            on_progress(int(next_arrival - active.size), flows.count)
    finish = np.where(np.isinf(state.remaining), np.inf, state.done_s + routes.latency_s)
    return NetworkResult(finish, state.first_rate, state.link_bytes[:links], state.peak[:links], events, "flow")


def _with_rate_caps(
    incidence: sp.spmatrix, capacity_Bps: np.ndarray, max_rate_Bps: np.ndarray | None
) -> tuple[sp.csc_matrix, np.ndarray]:
    """The share matrix and capacities with one virtual link per rate-capped flow (capacity = its
    cap): max-min fairness with a per-flow demand limit is max-min on that extended network."""
    if max_rate_Bps is None or not np.isfinite(max_rate_Bps).any():
        return incidence.tocsc(), capacity_Bps
    capped = np.flatnonzero(np.isfinite(max_rate_Bps))
    virtual = sp.csr_matrix(
        (np.ones(capped.size), (np.arange(capped.size), capped)), shape=(capped.size, incidence.shape[1])
    )
    return sp.vstack([incidence, virtual]).tocsc(), np.concatenate([capacity_Bps, max_rate_Bps[capped]])


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
