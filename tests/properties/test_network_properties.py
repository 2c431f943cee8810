"""Physical bounds of the flow model on random flows over small topologies (hypothesis)."""

from __future__ import annotations

from functools import cache

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fabricsim.network.analytic import AnalyticNetwork
from fabricsim.network.base import make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.topology.builders import LinkParams, dragonfly, fat_tree, leaf_spine, torus
from fabricsim.topology.routing import Routing, route_table

LINK = LinkParams(50e9, 1e-6)
BUILDERS = {
    "fat-tree": lambda: fat_tree(4, LINK),
    "leaf-spine": lambda: leaf_spine(3, 2, 4, LINK, oversubscription=3),
    "dragonfly": lambda: dragonfly(2, 2, 1, LINK),
    "torus": lambda: torus((3, 3), LINK),
}


@cache
def _table(name):
    return route_table(BUILDERS[name]())


@st.composite
def scenarios(draw):
    name = draw(st.sampled_from(sorted(BUILDERS)))
    hosts = _table(name).topology.hosts
    count = draw(st.integers(1, 24))
    src = np.array(draw(st.lists(st.integers(0, hosts - 1), min_size=count, max_size=count)))
    shift = np.array(draw(st.lists(st.integers(1, hosts - 1), min_size=count, max_size=count)))
    size = np.array(draw(st.lists(st.floats(1.0, 1e9), min_size=count, max_size=count)))
    start = np.array(draw(st.lists(st.floats(0.0, 1e-2), min_size=count, max_size=count)))
    routing = draw(st.sampled_from(list(Routing)))
    return name, make_flows(src, (src + shift) % hosts, size, start), routing, draw(st.integers(0, 2**31))


@given(scenarios())
def test_capacity_conservation_and_alpha_beta_floor(case):
    name, flows, routing, seed = case
    model = FlowNetwork(_table(name), routing, seed)
    result = model.run(flows)
    routes = model.routes(flows)
    assert np.all(np.isfinite(result.finish_s))
    assert result.peak_utilization.max() <= 1 + 1e-9  # no link above capacity
    carried = routes.incidence @ flows.size_bytes
    assert np.allclose(result.link_bytes, carried, rtol=1e-9, atol=1e-3)  # every byte sent arrives
    floor = AnalyticNetwork(_table(name), routing, seed).run(flows).finish_s
    assert np.all(result.finish_s >= floor * (1 - 1e-9))  # contention never helps
    line = _table(name).topology.line_rate_Bps
    assert np.all(result.finish_s >= flows.start_s + flows.size_bytes / line * (1 - 1e-9))
