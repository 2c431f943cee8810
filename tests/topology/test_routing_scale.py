"""Routing many sprayed flows (issue 27): the walk runs in blocks of states, with the same routes,
and a flow set whose routes would not fit in memory is refused with the ROUTE_ENTRIES cap."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.cli.app import main
from fabricsim.network.patterns import Pattern, pattern_flows
from fabricsim.topology import routing
from fabricsim.topology.builders import LinkParams, fat_tree
from fabricsim.topology.routing import FlowEnds, Routing, route, route_table


@pytest.mark.parametrize("policy", list(Routing))
def test_blocks_of_states_route_exactly_as_one_block(monkeypatch, policy: Routing) -> None:
    table = route_table(fat_tree(8, LinkParams(50e9, 1e-6)))
    flows = pattern_flows(Pattern.ALL_TO_ALL, 128, 1e6, 0)
    ends = FlowEnds(flows.src, flows.dst, flows.start_s, flows.label)
    whole = route(table, ends, policy, 3)
    monkeypatch.setattr(routing, "_STATES", 7)
    blocked = route(table, ends, policy, 3)
    for name in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(whole.incidence, name), getattr(blocked.incidence, name))
    assert whole.latency_s.tobytes() == blocked.latency_s.tobytes()


@pytest.mark.parametrize(("policy", "sprayed"), [("spray", True), ("adaptive", True), ("ecmp", False)])
def test_too_many_route_entries_is_one_line_naming_the_cap(capsys, monkeypatch, policy: str, sprayed: bool) -> None:
    argv = ["traffic", "permutation", "--topology", "fat-tree:k=8", "--routing", policy]  # 128 flows
    monkeypatch.setenv("FABRICSIM_MAX_ROUTE_ENTRIES", "300")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: routing: ") and err.count("\n") == 1
    assert "FABRICSIM_MAX_ROUTE_ENTRIES" in err and ("--routing ecmp" in err) == sprayed
    monkeypatch.setenv("FABRICSIM_MAX_ROUTE_ENTRIES", str(10**6))
    assert main([*argv, "--json"]) == 0
