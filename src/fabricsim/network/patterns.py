"""Synthetic traffic patterns on endpoints 0..hosts-1 (layer L3).

Each returns a :class:`FlowSet` of equal-size flows that all start at t = 0:
permutation (a random derangement: every host sends to one other, receives from one), all-to-all
(every ordered pair), incast (every other host into host 0) and ring (host i to i + 1).
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np

from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.network.base import FlowSet, make_flows


class Pattern(StrEnum):
    PERMUTATION = "permutation"
    ALL_TO_ALL = "all-to-all"
    INCAST = "incast"
    RING = "ring"


def parse_pattern(name: str) -> Pattern:
    return parse_choice("pattern", name, Pattern)


def derangement(hosts: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation without fixed points (rejection sampling, ~e tries)."""
    while True:
        perm = rng.permutation(hosts)
        if not np.any(perm == np.arange(hosts)):
            return perm


def flow_count(pattern: Pattern, hosts: int) -> int:
    """How many flows :func:`pattern_flows` makes on ``hosts`` endpoints (to check a cap first)."""
    if pattern == Pattern.ALL_TO_ALL:
        return hosts * (hosts - 1)
    return hosts - 1 if pattern == Pattern.INCAST else hosts


def pattern_flows(pattern: Pattern, hosts: int, size_bytes: float, seed: int) -> FlowSet:
    """Flows of ``pattern`` over ``hosts`` endpoints, ``size_bytes`` each; needs >= 2 hosts."""
    if hosts < 2:
        raise FabricsimError("hosts", f"pattern {pattern.value} needs at least 2 hosts, got {hosts}")
    ids = np.arange(hosts)
    if pattern == Pattern.PERMUTATION:
        return make_flows(ids, derangement(hosts, np.random.default_rng(seed)), size_bytes)
    if pattern == Pattern.ALL_TO_ALL:
        src, dst = np.divmod(np.arange(hosts * hosts), hosts)
        keep = src != dst
        return make_flows(src[keep], dst[keep], size_bytes)
    if pattern == Pattern.INCAST:
        return make_flows(ids[1:], 0, size_bytes)
    return make_flows(ids, (ids + 1) % hosts, size_bytes)


def host_throughput_fraction(flows: FlowSet, finish_s: np.ndarray, line_rate_Bps: float) -> np.ndarray:
    """Per sending host: bytes sent / (its last finish - its first start) / line rate.

    For a permutation this is each flow's mean rate; for all-to-all, a host's aggregate.
    """
    senders, inverse = np.unique(flows.src, return_inverse=True)
    sent = np.bincount(inverse, flows.size_bytes, senders.size)
    last = np.full(senders.size, -np.inf)
    np.maximum.at(last, inverse, finish_s)
    first = np.full(senders.size, np.inf)
    np.minimum.at(first, inverse, flows.start_s)
    return sent / np.maximum(last - first, 1e-30) / line_rate_Bps
