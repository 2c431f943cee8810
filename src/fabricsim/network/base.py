"""The network seam (layer L3): a set of flows in, finish times and per-link load out.

Every fidelity implements :class:`NetworkModel`; collectives and the engine never know which one
runs. Flows name endpoints by index into ``Topology.endpoints`` (ranks already placed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fabricsim.errors import FabricsimError


@dataclass(frozen=True, slots=True)
class FlowSet:
    """Flows ``src[i] -> dst[i]`` of ``size_bytes[i]`` starting at ``start_s[i]``.

    ``label`` stands in for the transport's port numbers: ECMP hashes (src, dst, label), so flows
    of one pair with one label (one connection) always share a path. ``max_rate_Bps`` (None: no
    flow is capped) is each flow's own rate cap in bytes/s (inf: uncapped); a flow of infinite
    ``size_bytes`` (another tenant's steady traffic) must have a finite cap, sends for as long as
    the finite flows run, and finishes at inf.
    """

    src: np.ndarray
    dst: np.ndarray
    size_bytes: np.ndarray
    start_s: np.ndarray
    label: np.ndarray
    max_rate_Bps: np.ndarray | None = None
    traffic_class: np.ndarray | None = None  # packet fidelity: each flow's traffic class (None: the params' rule)

    @property
    def count(self) -> int:
        return int(self.src.size)

    @property
    def background(self) -> np.ndarray:
        """True for the flows of infinite size (they run for the whole phase at their capped rate)."""
        return ~np.isfinite(self.size_bytes)


def make_flows(src, dst, size_bytes, start_s=0.0, label=0, max_rate_Bps=None) -> FlowSet:
    """Build a :class:`FlowSet`, broadcasting scalars; rejects negative sizes and start times,
    caps that are not > 0, and infinite sizes without a finite cap (see :class:`FlowSet`)."""
    try:
        src_a, dst_a = (
            a.ravel().copy() for a in np.broadcast_arrays(np.asarray(src, np.int64), np.asarray(dst, np.int64))
        )
    except ValueError:
        raise FabricsimError("flows", "src and dst must have the same length") from None
    n = src_a.size
    size = np.broadcast_to(np.asarray(size_bytes, dtype=float), (n,)).copy()
    start = np.broadcast_to(np.asarray(start_s, dtype=float), (n,)).copy()
    label_a = np.broadcast_to(np.asarray(label, dtype=np.int64), (n,)).copy()
    rate = None if max_rate_Bps is None else np.broadcast_to(np.asarray(max_rate_Bps, dtype=float), (n,)).copy()
    if n and (np.isnan(size).any() or size.min() < 0 or start.min() < 0 or not np.all(np.isfinite(start))):
        raise FabricsimError("flows", "sizes and start times must be finite and >= 0")
    if n and rate is not None and (np.isnan(rate).any() or rate.min() <= 0):
        raise FabricsimError("flows", "max_rate_Bps must be > 0 (inf: uncapped)")
    unbounded = ~np.isfinite(size)
    if unbounded.any() and (rate is None or not np.all(np.isfinite(rate[unbounded]))):
        raise FabricsimError("flows", "a flow of infinite size needs a finite max_rate_Bps (a background rate)")
    return FlowSet(src_a, dst_a, size, start, label_a, rate)


@dataclass(frozen=True, slots=True)
class NetworkResult:
    """Per flow: ``finish_s`` (last byte delivered, path latency included) and ``first_rate_Bps``
    (its rate in the first allocation after it started); per link: ``link_bytes`` carried and
    ``peak_utilization`` (max over intervals of carried rate / capacity)."""

    finish_s: np.ndarray
    first_rate_Bps: np.ndarray
    link_bytes: np.ndarray
    peak_utilization: np.ndarray
    events: int
    fidelity: str

    @property
    def completion_time_s(self) -> float:
        return float(self.finish_s.max(initial=0.0))


class NetworkModel(Protocol):
    """A network fidelity: route and time a set of flows on its topology."""

    fidelity: str

    def run(self, flows: FlowSet) -> NetworkResult: ...
