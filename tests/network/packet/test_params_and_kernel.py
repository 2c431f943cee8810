"""Parameter overrides, the event heap, and HPCC/DCQCN reaction-point arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from packet_helpers import simulate, star

from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows
from fabricsim.network.packet import heap
from fabricsim.network.packet.params import PacketParams, parse_cc_params, resolved


def test_overrides_are_validated_with_the_field_named():
    params = PacketParams().with_overrides(parse_cc_params(["timer-s=1.2e-3", "pmax=0.01"]))
    assert params.timer_s == 1.2e-3 and params.pmax == 0.01
    with pytest.raises(FabricsimError, match="timer_s"):
        PacketParams().with_overrides({"timer": 1.0})
    with pytest.raises(FabricsimError, match="pmax"):
        PacketParams().with_overrides({"pmax": 2.0})
    with pytest.raises(FabricsimError, match="finite"):
        PacketParams().with_overrides({"kmin_bytes": float("nan")})
    with pytest.raises(FabricsimError, match="NAME=VALUE"):
        parse_cc_params(["kmin_bytes"])
    with pytest.raises(FabricsimError, match="number"):
        parse_cc_params(["kmin_bytes=lots"])


def test_line_rate_defaults_follow_the_hpcc_repository_rules():
    p = resolved(PacketParams(), 100e9 / 8)  # 100 Gb/s
    assert p.buffer_bytes == pytest.approx(32e6)
    assert p.kmin_bytes == pytest.approx(400e3) and p.kmax_bytes == pytest.approx(1.6e6)


def test_heap_pops_in_time_then_fifo_order():
    n = 64
    ht, hk, hs = np.empty(n), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    meta = np.zeros(2, dtype=np.int64)
    times = np.random.default_rng(0).integers(0, 5, 40).astype(float)
    for i, t in enumerate(times):
        heap.push(ht, hk, hs, meta, t, i)
    out = [heap.pop(ht, hk, hs, meta) for _ in range(times.size)]
    assert out == sorted(((t, i) for i, t in enumerate(times)), key=lambda x: (x[0], x[1]))


def test_hpcc_holds_utilization_near_eta_without_queues():
    """Two flows into one port: HPCC keeps the port busy at about eta (0.95) with a small queue."""
    topo = star(3, 100)
    flows = make_flows([1, 2], 0, 10e6, 0.0)
    run = simulate(topo, flows, "hpcc", "pfc")
    utilization = flows.size_bytes.sum() / run.finish_s.max() / topo.line_rate_Bps
    assert 0.85 <= utilization <= 0.99
    assert run.queue_max_bytes.max() < 1e6
    assert run.pause_frames.sum() == 0


def test_dcqcn_rate_limit_caps_a_lone_flow():
    topo = star(2, 100)
    flows = make_flows([1], 0, 2e6, 0.0)
    run = simulate(topo, flows, "dcqcn", "pfc", rate_limit_Bps=topo.line_rate_Bps / 4)
    assert run.finish_s[0] == pytest.approx(4 * 2e6 / topo.line_rate_Bps, rel=0.02)
