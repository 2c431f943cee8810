"""Parameter overrides, the event heap, and HPCC/DCQCN reaction-point arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from packet_helpers import simulate, star

from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows
from fabricsim.network.packet import heap
from fabricsim.network.packet.params import HEADERS, PacketParams, parse_cc_params, resolved


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
    wire = 2e6 + np.ceil(2e6 / 4096) * sum(HEADERS["roce"])  # the NIC paces its wire bytes
    assert run.finish_s[0] == pytest.approx(4 * wire / topo.line_rate_Bps, rel=0.02)


# NVIDIA ConnectX firmware defaults (mlxconfig; NVIDIA DOCA "DCQCN CC Parameters"), in their own units,
# for the tests below to check the reaction point against: rates in Mb/s, times in us, RPG_BYTE_RESET
# in 64 B units, DCE_TCP_G as alpha <- (G alpha + (1024 - G) CNP) / 1024, RPG_GD as a cut of
# alpha x 1024 / 2^GD, RPG_MIN_DEC_FAC in percent, INITIAL_ALPHA_VALUE over 1024.
RPG_AI_RATE_BPS = 5e6 / 8
RPG_HAI_RATE_BPS = 50e6 / 8
RPG_MIN_RATE_BPS = 1e6 / 8
RPG_TIME_RESET_S = 300e-6
RPG_BYTE_RESET_BYTES = 32_767 * 64
RPG_THRESHOLD = 1
DCE_TCP_G = 1019
DCE_TCP_RTT_S = 1e-6
RPG_GD = 11
RPG_MIN_DEC_FAC = 50
RATE_REDUCE_MONITOR_PERIOD_S = 4e-6
INITIAL_ALPHA = 1023 / 1024


def _dcqcn_state(**overrides):
    """One flow's DCQCN tables at line rate 100 Gb/s with the NVIDIA defaults (plus overrides)."""
    from fabricsim.network.packet import layout as L  # noqa: N812
    from fabricsim.network.packet.params import CongestionControl, Lossless, RunOptions, kernel_vector

    opts = RunOptions(CongestionControl.DCQCN, Lossless.PFC, 100e9 / 8, 0.0, 0)
    P = kernel_vector(PacketParams(**overrides), opts)
    FF, FI = np.zeros((1, L.FF_COLS)), np.zeros((1, L.FI_COLS), dtype=np.int64)
    FF[0, L.FF_RC] = FF[0, L.FF_RT] = opts.line_Bps
    FF[0, L.FF_ALPHA], FF[0, L.FF_LAST_DEC] = P[L.P_ALPHA0], -1.0
    return FF, FI, P, L


@pytest.mark.parametrize("clamp_after_timer", [1.0, 0.0])
def test_dcqcn_target_rate_follows_a_byte_counter_increase(clamp_after_timer):
    """A cut after a byte-counter increase sets Rt to the current rate with or without
    CLAMP_TGT_RATE_AFTER_TIME_INC (the DCQCN authors' ns-3, rpr_cnm_received); a cut with no
    increase since the previous one keeps Rt."""
    from fabricsim.network.packet.reaction import dcqcn_cnp, dcqcn_sent

    FF, FI, P, L = _dcqcn_state(clamp_target_after_timer=clamp_after_timer)
    dcqcn_cnp(FF, FI, P, 0, 0.0)  # first cut: Rt <- line rate
    dcqcn_cnp(FF, FI, P, 0, 10e-6)  # no increase in between: Rt stays at the line rate
    assert FF[0, L.FF_RT] == pytest.approx(100e9 / 8)
    dcqcn_sent(FF, FI, P, 0, P[L.P_BYTE_RESET])  # one byte-counter expiry raises Rc
    before = FF[0, L.FF_RC]
    dcqcn_cnp(FF, FI, P, 0, 20e-6)
    assert FF[0, L.FF_RT] == pytest.approx(before)
    assert FF[0, L.FF_RC] < before


def test_dcqcn_target_rate_follows_a_timer_increase_only_with_the_flag():
    from fabricsim.network.packet.reaction import dcqcn_cnp, dcqcn_timer

    for flag, clamped in ((1.0, True), (0.0, False)):
        FF, FI, P, L = _dcqcn_state(clamp_target_after_timer=flag)
        dcqcn_cnp(FF, FI, P, 0, 0.0)
        dcqcn_cnp(FF, FI, P, 0, 10e-6)
        dcqcn_timer(FF, FI, P, 0, 10e-6 + P[L.P_TIMER])  # one timer expiry raises Rc
        before = FF[0, L.FF_RC]
        dcqcn_cnp(FF, FI, P, 0, 20e-6 + P[L.P_TIMER])
        assert bool(FF[0, L.FF_RT] == pytest.approx(before)) is clamped


def test_dcqcn_increase_stages_fast_recovery_additive_then_hyper():
    """Expiry counted first (F = 2 here): T=1 fast recovery (Rt unchanged); T=2 additive
    (min(T, BC) < F); T=2, BC=2 hyper with i = min - F + 1 = 1."""
    from fabricsim.network.packet.reaction import dcqcn_cnp, dcqcn_sent, dcqcn_timer

    FF, FI, P, L = _dcqcn_state(fast_recovery_steps=2.0)
    dcqcn_cnp(FF, FI, P, 0, 0.0)
    rt = FF[0, L.FF_RT]
    dcqcn_cnp(FF, FI, P, 0, 10e-6)  # Rc well below Rt, so Rt caps nothing below
    dcqcn_timer(FF, FI, P, 0, 10e-6 + P[L.P_TIMER])
    assert FF[0, L.FF_RT] == rt  # fast recovery
    FF[0, L.FF_RT] = rt = 50e9 / 8  # room to grow below the line rate
    dcqcn_timer(FF, FI, P, 0, 10e-6 + 2 * P[L.P_TIMER])
    assert FF[0, L.FF_RT] == pytest.approx(rt + RPG_AI_RATE_BPS)  # additive: BC = 0 < F
    dcqcn_sent(FF, FI, P, 0, P[L.P_BYTE_RESET])  # BC = 1 < F: additive again
    assert FF[0, L.FF_RT] == pytest.approx(rt + 2 * RPG_AI_RATE_BPS)
    dcqcn_sent(FF, FI, P, 0, P[L.P_BYTE_RESET])  # BC = 2 = F = T: hyper, i = 1
    assert FF[0, L.FF_RT] == pytest.approx(rt + 2 * RPG_AI_RATE_BPS + RPG_HAI_RATE_BPS)


def test_dcqcn_cuts_follow_the_firmware_alpha_and_rate_rules():
    """CNPs at 0, 2 and 4.5 us at 100 Gb/s: the first cuts by INITIAL_ALPHA x 1024 / 2^RPG_GD; the
    second updates alpha for the DCE_TCP_RTT periods completed since the first, in time order (the
    period [0, 1 us) held a CNP, [1, 2 us) none) but falls within RATE_REDUCE_MONITOR_PERIOD (4 us) of
    the cut, so the rate stays; the third does both again ([2, 3 us) held a CNP, [3, 4 us) none).
    The firmware's rule: once every dce_tcp_rtt, alpha = cnp_received x g + (1 - g) x alpha."""
    from fabricsim.network.packet.reaction import dcqcn_cnp

    def alpha_after(alpha, periods):  # one period with a CNP (the previous one's), then (periods - 1) quiet
        alpha = (DCE_TCP_G * alpha + (1024 - DCE_TCP_G)) / 1024
        return alpha * (DCE_TCP_G / 1024) ** (periods - 1)

    FF, FI, P, L = _dcqcn_state()
    gd = 1024 / 2**RPG_GD
    dcqcn_cnp(FF, FI, P, 0, 0.0)
    first = 100e9 / 8 * (1 - INITIAL_ALPHA * gd)
    assert FF[0, L.FF_RC] == pytest.approx(first, rel=1e-12)
    dcqcn_cnp(FF, FI, P, 0, 2e-6)
    alpha = alpha_after(INITIAL_ALPHA, round(2e-6 / DCE_TCP_RTT_S))
    assert FF[0, L.FF_ALPHA] == pytest.approx(alpha, rel=1e-12)
    assert FF[0, L.FF_RC] == pytest.approx(first, rel=1e-12)  # 2 us < the monitor period: no cut
    assert RATE_REDUCE_MONITOR_PERIOD_S <= 4.5e-6
    dcqcn_cnp(FF, FI, P, 0, 4.5e-6)
    alpha = alpha_after(alpha, int(2.5e-6 / DCE_TCP_RTT_S))
    assert FF[0, L.FF_ALPHA] == pytest.approx(alpha, rel=1e-12)
    assert FF[0, L.FF_RC] == pytest.approx(first * (1 - alpha * gd), rel=1e-12)


def test_dcqcn_cut_floors_are_the_minimum_decrease_factor_and_the_minimum_rate():
    from fabricsim.network.packet.reaction import dcqcn_cnp

    FF, FI, P, L = _dcqcn_state(gd_factor=1.0)  # a cut of alpha ~ 1 would stop the flow
    dcqcn_cnp(FF, FI, P, 0, 0.0)
    assert FF[0, L.FF_RC] == pytest.approx(100e9 / 8 * RPG_MIN_DEC_FAC / 100, rel=1e-12)
    FF, FI, P, L = _dcqcn_state(gd_factor=1.0, min_dec_factor=0.0, alpha_initial=1.0)
    dcqcn_cnp(FF, FI, P, 0, 0.0)
    assert FF[0, L.FF_RC] == pytest.approx(RPG_MIN_RATE_BPS, rel=1e-12)


def test_dcqcn_increase_events_come_every_timer_period_and_byte_reset():
    """RPG_TIME_RESET and RPG_BYTE_RESET set when a rate increase happens; with RPG_THRESHOLD 1 the
    first one is already additive (Rt + RPG_AI_RATE, Rc halfway to it)."""
    from fabricsim.network.packet.reaction import dcqcn_cnp, dcqcn_sent, dcqcn_timer

    assert RPG_THRESHOLD == 1
    FF, FI, P, L = _dcqcn_state()
    dcqcn_cnp(FF, FI, P, 0, 0.0)
    FF[0, L.FF_RT] = rt = 50e9 / 8  # below the line rate: room to grow
    rc = FF[0, L.FF_RC]
    dcqcn_timer(FF, FI, P, 0, 0.999 * RPG_TIME_RESET_S)
    dcqcn_sent(FF, FI, P, 0, RPG_BYTE_RESET_BYTES - 64)
    assert (FF[0, L.FF_RT], FF[0, L.FF_RC]) == (rt, rc)  # neither has expired
    dcqcn_timer(FF, FI, P, 0, RPG_TIME_RESET_S)
    assert FF[0, L.FF_RT] == pytest.approx(rt + RPG_AI_RATE_BPS, rel=1e-12)
    assert FF[0, L.FF_RC] == pytest.approx((rt + RPG_AI_RATE_BPS + rc) / 2, rel=1e-12)
    dcqcn_sent(FF, FI, P, 0, 64)  # the byte counter expires too: T = BC = 1 >= F: hyper
    assert FF[0, L.FF_RT] == pytest.approx(rt + RPG_AI_RATE_BPS + RPG_HAI_RATE_BPS, rel=1e-12)


def test_hpcc_grows_additively_for_max_stage_updates_then_multiplicatively():
    """HPCC (Li et al., SIGCOMM'19, Algorithm 1, maxStage = 5): below the target utilization eta a
    window update adds W_AI, up to maxStage times in a row; the next one is multiplicative,
    Wc / (U / eta) + W_AI. Each ACK here reports one hop at half its capacity and no queue, so
    U = 0.5 < eta = 0.95 throughout."""
    from fabricsim.network.packet import layout as L  # noqa: N812
    from fabricsim.network.packet.params import CongestionControl, Lossless, RunOptions, kernel_vector
    from fabricsim.network.packet.reaction import hpcc_ack

    line, rtt = 100e9 / 8, 8e-6
    P = kernel_vector(PacketParams(), RunOptions(CongestionControl.HPCC, Lossless.PFC, line, 0.0, 0))
    FF, FI = np.zeros((1, L.FF_COLS)), np.zeros((1, L.FI_COLS), dtype=np.int64)
    PI, PF, LINT = np.zeros((1, L.PI_COLS), dtype=np.int64), np.zeros((1, L.PF_COLS)), np.zeros((1, L.PF_COLS))
    FF[0, L.FF_BASE_RTT] = rtt
    FF[0, L.FF_WINC] = FF[0, L.FF_WIN] = w = line * rtt / 4
    FI[0, L.FI_HOPS] = PI[0, L.PI_HOP] = 1
    wai = 10e6 / 8 * (100 / 25) * rtt  # HPCC repository: AI = 10 Mb/s x bw / 25, per base RTT
    windows = []
    for ack in range(1, 9):  # one ACK per RTT, each past the last update's sequence
        PI[0, L.PI_SEQ] = FF[0, L.FF_SENT] = ack * 1_000_000
        LINT[0, :4] = (0.0, 0.0, 0.0, line)
        PF[0, :4] = (0.0, 0.5 * line * rtt, rtt, line)  # half the link's bytes over one RTT, no queue
        hpcc_ack(FF, FI, PI, PF, LINT, P, 0)
        windows.append(FF[0, L.FF_WIN])
    expected = []
    for update in range(8):
        w = w / (0.5 / 0.95) + wai if update == 5 else w + wai  # stage 5 = maxStage: multiplicative
        expected.append(min(w, line * rtt))
    assert windows == pytest.approx(expected, rel=1e-9)
