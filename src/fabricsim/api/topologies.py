"""Topology strings to topologies, with the catalog passed in (public API, layer L9).

Apart from :mod:`fabricsim.api.communication` so that callers that only build a graph (``cost``,
``train``'s energy figures) do not import the flow-level network (scipy).
"""

from __future__ import annotations

from fabricsim import catalog
from fabricsim.errors import FabricsimError
from fabricsim.specs import SystemSpec
from fabricsim.topology.builders import LinkParams
from fabricsim.topology.graph import Topology
from fabricsim.topology.parse import BUILDERS, DEFAULT_LINK, DEFAULT_SWITCH, TopologyCatalog, parse_topology
from fabricsim.topology.system import build_system_topology


def topology_catalog() -> TopologyCatalog:
    """What builder strings may name: the default fabric link and the catalog systems."""
    link = catalog.load_link(DEFAULT_LINK)
    hop = catalog.load_switch(DEFAULT_SWITCH)
    return TopologyCatalog(LinkParams(link.bandwidth_Bps, hop.latency_s), tuple(catalog.names("systems")),
                           catalog.load_system)


def build_topology(text: str) -> Topology:
    """The topology a builder string or catalog system name describes (see :mod:`fabricsim.topology.parse`)."""
    return parse_topology(text, topology_catalog())


def system_topology(system: SystemSpec, gpus: int, topology: str | None = None) -> Topology:
    """``gpus`` GPUs of ``system`` with its own scale-out network, or with the network the builder
    string ``topology`` describes in its place (``--topology`` on train/infer/serve/plan: the
    builder's host ports become the NICs, see :mod:`fabricsim.topology.system`). A catalog system
    name is not a scale-out network and is refused."""
    if topology is None:
        return build_system_topology(system, gpus)
    name = topology.strip().partition(":")[0].strip()
    if name not in BUILDERS:
        raise FabricsimError("topology", f"{name!r} is not a scale-out network builder",
                             f"use one of {', '.join(sorted(BUILDERS))}, e.g. fat-tree:k=16")  # fmt: skip
    return build_system_topology(system, gpus, build_topology(topology))
