"""Rail-only scale-out fabric (layer L2): one independent Clos per rail, no spine across rails.

Wang et al., "Rail-only: a low-cost high-performance network for training LLMs with trillion
parameters" (arXiv 2307.12169): NIC r of every scale-up domain joins rail r; rails are not
connected to each other, so traffic between rails is forwarded through the scale-up domain
(NVLink) first. A rail whose NICs fit one switch (nodes <= radix) is that one switch, as the
paper's rail switches; a larger rail is cabled like one rail of
:func:`fabricsim.topology.builders.rail_leaves` (leaves and a non-blocking Clos above them).
"""

from __future__ import annotations

from dataclasses import replace

from fabricsim.topology.builders import RailSpec, rail_leaves
from fabricsim.topology.graph import GraphBuilder, NodeKind, Topology


def rail_only(spec: RailSpec) -> Topology:
    """Endpoints are the NICs (node-major, rail-minor), as in ``rail_optimized``; rail r is a
    separate Clos of ``spec.radix`` switches over the ``spec.nodes`` NICs of rail r."""
    graph = GraphBuilder()
    nics = graph.add_nodes(spec.nodes * spec.rails, NodeKind.GPU).reshape(spec.nodes, spec.rails)
    one_rail = replace(spec, rails=1)
    for rail in range(spec.rails):
        if spec.nodes <= spec.radix:
            switch = graph.add_nodes(1, NodeKind.SWITCH)
            graph.connect(nics[:, rail], switch, spec.nic.capacity_Bps, spec.nic.latency_s)
        else:
            rail_leaves(graph, nics[:, rail : rail + 1], one_rail)
    return graph.build(f"rail-only-{spec.nodes}x{spec.rails}", nics.ravel(), spec.nic.capacity_Bps)
