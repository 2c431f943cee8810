"""Open-loop flow arrivals from a flow-size CDF at a given load (layer L3).

The CDFs are the HPCC repository's traffic-generator inputs (alibaba-edu/High-Precision-Congestion-
Control, ``traffic_gen/WebSearch_distribution.txt`` and ``traffic_gen/FbHdp_distribution.txt``,
commit 9cf8b9e), points (bytes, cumulative %), sampled by inverse transform with linear
interpolation between points, as that generator does. WebSearch is the DCTCP paper's web-search
workload (Alizadeh et al., SIGCOMM'10); FbHdp the Facebook Hadoop cluster (Roy et al., SIGCOMM'15).

Arrivals are Poisson per host: mean gap = mean_bytes / (line_Bps x load); destinations are uniform
over the other hosts (the generator's rule; see shared/reference/congestion-control.md).
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np

from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.network.base import FlowSet, make_flows


class FlowSizeCdf(StrEnum):
    WEBSEARCH = "websearch"
    FB_HADOOP = "fb-hadoop"


# (bytes, cumulative percent), verbatim from the files named in the module docstring
_POINTS: dict[FlowSizeCdf, tuple[tuple[float, float], ...]] = {
    FlowSizeCdf.WEBSEARCH: (
        (0, 0), (10_000, 15), (20_000, 20), (30_000, 30), (50_000, 40), (80_000, 53), (200_000, 60),
        (1_000_000, 70), (2_000_000, 80), (5_000_000, 90), (10_000_000, 97), (30_000_000, 100),
    ),
    FlowSizeCdf.FB_HADOOP: (
        (0, 0), (100, 1), (200, 2), (300, 5), (350, 15), (400, 20), (500, 30), (600, 40), (700, 50),
        (1_000, 60), (2_000, 67), (7_000, 70), (30_000, 72), (50_000, 82), (80_000, 87), (120_000, 90),
        (300_000, 95), (1_000_000, 97.5), (2_000_000, 99), (10_000_000, 100),
    ),
}  # fmt: skip


def parse_cdf(name: str) -> FlowSizeCdf:
    return parse_choice("cdf", name, FlowSizeCdf)


def cdf_points(cdf: FlowSizeCdf) -> tuple[np.ndarray, np.ndarray]:
    """(sizes in bytes, cumulative probabilities in [0, 1])."""
    pts = np.asarray(_POINTS[cdf], dtype=float)
    return pts[:, 0], pts[:, 1] / 100.0


def mean_bytes(cdf: FlowSizeCdf) -> float:
    """Mean flow size under linear interpolation: sum of segment probability x segment midpoint."""
    size, prob = cdf_points(cdf)
    return float(np.sum(np.diff(prob) * (size[1:] + size[:-1]) / 2))


def sample_sizes(cdf: FlowSizeCdf, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` flow sizes (bytes, at least 1) by inverse transform sampling."""
    size, prob = cdf_points(cdf)
    return np.maximum(1.0, np.round(np.interp(rng.random(count), prob, size)))


def poisson_flows(cdf: FlowSizeCdf, hosts: int, load: float, duration_s: float, spec: tuple[float, int]) -> FlowSet:
    """Open-loop arrivals on ``hosts`` hosts for ``duration_s`` at ``load`` of each host's line rate.

    ``spec`` = (line rate in bytes/s, seed). Flows are ordered by start time (ties by host).
    """
    line_Bps, seed = spec
    if hosts < 2:
        raise FabricsimError("hosts", f"open-loop arrivals need at least 2 hosts, got {hosts}")
    if not 0 < load <= 1:
        raise FabricsimError("load", f"must be in (0, 1], got {load}", "e.g. --load 0.3")
    if not 0 < duration_s < np.inf:
        raise FabricsimError("duration", f"must be a positive finite time, got {duration_s}")
    rng = np.random.default_rng(seed)
    rate = line_Bps * load / mean_bytes(cdf)  # flows per second per host
    expected = rate * duration_s
    if expected * hosts > 2_000_000:
        raise FabricsimError("duration", f"about {expected * hosts:.0f} flows is too many", "shorten --duration")
    starts, sources = [], []
    for h in range(hosts):
        gaps = rng.exponential(1.0 / rate, int(expected + 10 * np.sqrt(expected) + 20))
        t = np.cumsum(gaps)
        t = t[t < duration_s]
        starts.append(t)
        sources.append(np.full(t.size, h))
    start = np.concatenate(starts)
    src = np.concatenate(sources)
    order = np.lexsort((src, start))
    start, src = start[order], src[order]
    dst = (src + rng.integers(1, hosts, src.size)) % hosts  # uniform over the other hosts
    return make_flows(src, dst, sample_sizes(cdf, src.size, rng), start)
