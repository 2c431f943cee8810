"""The packet kernel's hot path (issue 26, events per second): a flow's out-link at a switch found
through the per-node index is the one the scan of all the flow's links picked (the same spraying
counters, so the same results), and the event loop runs without numba's reference counting."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.network.packet import kernel, loop
from fabricsim.network.packet.kernel import _entropy_hash, _next_link, out_link_index
from fabricsim.network.packet.layout import LI_COLS, LI_SRC


def _scan(LI, flow_ptr, flow_links, spray_rr, f, node, ent):
    """The former _next_link: two scans of the flow's links (the reference)."""
    at = [i for i in range(flow_ptr[f], flow_ptr[f + 1]) if LI[flow_links[i], LI_SRC] == node]
    if len(at) <= 1:
        return flow_links[at[0]] if at else -1
    first = at[0]
    if ent >= 0:
        pick = _entropy_hash(spray_rr[first], ent) % len(at)
    else:
        pick = spray_rr[first] % len(at)
        spray_rr[first] += 1
    return flow_links[at[pick]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_next_link_picks_what_the_scan_picked(seed):
    rng = np.random.default_rng(seed)
    links, nodes, flows = 60, 12, 9
    LI = np.zeros((links, LI_COLS), dtype=np.int64)
    LI[:, LI_SRC] = rng.integers(0, nodes, links)
    chosen = [np.sort(rng.choice(links, rng.integers(0, 25), replace=False)) for _ in range(flows)]
    flow_ptr = np.concatenate([[0], np.cumsum([c.size for c in chosen])]).astype(np.int64)
    flow_links = np.concatenate(chosen).astype(np.int64)
    spray_rr = rng.integers(0, 1 << 20, flow_links.size).astype(np.int64)
    order, order_src = out_link_index(LI, flow_ptr, flow_links)
    route = (flow_ptr, flow_links, spray_rr.copy(), order, order_src)
    reference = spray_rr.copy()
    for _ in range(600):
        f, node = int(rng.integers(0, flows)), int(rng.integers(0, nodes))
        ent = int(rng.integers(-1, 8))  # -1: round robin (the counter moves), else an entropy value
        want = _scan(LI, flow_ptr, flow_links, reference, f, node, ent)
        assert _next_link(LI, route, f, node, ent) == want
    assert np.array_equal(route[2], reference)  # the round-robin counters moved alike


def test_event_loop_runs_without_reference_counting():
    # a per-array atomic increment and decrement on every call was half the time per event
    for function in (loop._events, loop._reply, loop._control_hop, loop._control, kernel._nic_kick):
        assert function.targetoptions.get("_nrt") is False, function.py_func.__name__
