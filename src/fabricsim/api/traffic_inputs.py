"""Inputs ``traffic`` shares between its fidelities (public API helpers, layer L9): the failed fabric
cables of ``--fail-links/--fail-fraction`` and the flows of ``--matrix FILE``.

Shared by the flow fidelity (:func:`fabricsim.api.communication.traffic`) and the packet fidelity
(:func:`fabricsim.api.packet_traffic.packet_traffic`), so both fail the same cables for a seed and
read a matrix file the same way.
"""

from __future__ import annotations

from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.network.base import FlowSet
from fabricsim.network.matrix import FIELD, JSONL_SUFFIXES, parse_matrix
from fabricsim.textfile import read_text
from fabricsim.topology.graph import Topology, fabric_cables, fail_cables
from fabricsim.topology.routing import route_table, unroutable


def failure_count(topo: Topology, fail_links: int, fail_fraction: float) -> int:
    """Cables to fail: ``fail_links``, or ``fail_fraction`` of the fabric cables (rounded)."""
    if fail_links and fail_fraction:
        raise FabricsimError("fail-links", "give --fail-links or --fail-fraction, not both")
    if fail_fraction:
        return round(fail_fraction * fabric_cables(topo).shape[0])
    return fail_links


def failed_topology(topo: Topology, flows: FlowSet, count: int, seed: int) -> Topology:
    """``topo`` less ``count`` random fabric cables (seeded); every flow must still have a path."""
    failed, _ = fail_cables(topo, count, seed)
    lost = unroutable(route_table(failed), flows.src, flows.dst)
    if lost.any():
        raise FabricsimError(
            "fail-links",
            f"{int(lost.sum())} of {flows.count} flows have no path left after failing {count} fabric cables"
            f" (--fail-links / --fail-fraction, seed {seed})",
            "fail fewer cables or try another --seed",
        )
    return failed


def matrix_flows(path: str, hosts: int) -> FlowSet:
    """The flows of the traffic-matrix file ``path`` (CSV, or JSON Lines for a .jsonl/.json/.ndjson
    name) over ``hosts`` hosts; see :mod:`fabricsim.network.matrix`."""
    text = read_text(path, FIELD)
    return parse_matrix(text, Path(path).suffix.lower() in JSONL_SUFFIXES, hosts)
