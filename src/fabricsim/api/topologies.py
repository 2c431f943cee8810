"""Topology strings to topologies, with the catalog passed in (public API, layer L9).

Apart from :mod:`fabricsim.api.communication` so that callers that only build a graph (``cost``,
``train``'s energy figures) do not import the flow-level network (scipy).
"""

from __future__ import annotations

from fabricsim import catalog
from fabricsim.topology.builders import LinkParams
from fabricsim.topology.graph import Topology
from fabricsim.topology.parse import DEFAULT_LINK, DEFAULT_SWITCH, TopologyCatalog, parse_topology


def topology_catalog() -> TopologyCatalog:
    """What builder strings may name: the default fabric link and the catalog systems."""
    link = catalog.load_link(DEFAULT_LINK)
    hop = catalog.load_switch(DEFAULT_SWITCH)
    return TopologyCatalog(LinkParams(link.bandwidth_Bps, hop.latency_s), tuple(catalog.names("systems")),
                           catalog.load_system)


def build_topology(text: str) -> Topology:
    """The topology a builder string or catalog system name describes (see :mod:`fabricsim.topology.parse`)."""
    return parse_topology(text, topology_catalog())
