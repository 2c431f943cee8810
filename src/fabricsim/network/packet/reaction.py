"""Sender-side congestion control of the packet kernel: DCQCN and HPCC reaction points (layer L3).

DCQCN (Zhu et al., SIGCOMM'15, with NVIDIA ConnectX's parameter semantics, DOCA "DCQCN CC
Parameters"): a CNP cuts the rate at most once per rate-reduce monitor period,
Rt <- Rc, Rc <- Rc (1 - alpha * GD_FACTOR) (GD_FACTOR = 1024 / 2^RPG_GD = 1/2 by default), never
below Rc * MIN_DEC nor MIN_RATE; alpha is updated once per alpha period,
alpha <- (1 - g) alpha + g if a CNP arrived in it, else (1 - g) alpha (applied lazily when the next
CNP arrives, period by period in time order: the period of the previous CNP first, then the quiet
ones, so a cut uses alpha as of the last completed period; a flow's first CNP starts from
INITIAL_ALPHA_VALUE). Source: the firmware's description of DCE_TCP_G / DCE_TCP_RTT ("alpha =
cnp_received x g + (1 - g) x alpha, once every dce_tcp_rtt; cnp_received is one if a CNP was
received for this flow since the previous update", NVIDIA mstflint register layouts; DOCA "DCQCN
CC Parameters"); before, the increment of the previous CNP's period was applied after the quiet
periods' decay, an alpha up to g too high. The target rate Rt takes
Rc at a cut (a) always if CLAMP_TGT_RATE is set, (b) if the byte counter raised the rate since
the previous cut (QCN's rule, kept with either flag), (c) if CLAMP_TGT_RATE_AFTER_TIME_INC is set
and the timer raised it, and (d) at a flow's first cut. NVIDIA defaults: 0 and 1, so Rt follows
Rc whenever *any* increase happened since the last cut. Source: the DCQCN authors' ns-3
(bobzhuyb/ns3-rdma, ``QbbNetDevice::rpr_cnm_received``) and the firmware's own description
("the target rate should be updated if the transmission rate was increased due to the timer, and
not only due to the byte counter"); reading (c) as "only timer increases clamp" left Rt stale at
line rate between timer expiries and made byte-counter recoveries rate-proportional (unfair).
The rate rises on timer expiries (every TIMER s) and byte-counter expiries (every BYTE_RESET
bytes), counting the expiry first: fast recovery while max(T, BC) < F (Rc <- (Rt + Rc) / 2),
additive increase (Rt += R_AI) while min(T, BC) < F, then hyper increase (Rt += i R_HAI,
i = min(T, BC) - F + 1), as ``rpr_active_select`` / ``rpr_hyper_increase`` of the same code.

HPCC (Li et al., SIGCOMM'19, Algorithm 1): each ACK carries per-hop INT (queue length, txBytes,
timestamp, capacity, link); u_j = min(q, q_prev) / (B T) + txRate / B, U is an EWMA of the largest u
with weight tau / T; W = Wc / (U / eta) + W_AI when U >= eta or after maxStage additive steps,
else W = Wc + W_AI; Wc is updated once per RTT (when the ACK's seq passes lastUpdateSeq). The
pacing rate is W / T.

NSCC, simplified (Ultra Ethernet's sender-based congestion control: UEC 1.0 specification,
congestion management, NSCC [section number unverified here]; its control law as in FASTFLOW /
SMaRTT-REPS, Bonato et al., and htsim's ``uec.cpp``): a window W, no pacing; each ACK brings the
packet's ECN bit and its queueing delay d = RTT - base RTT, compared with a target delay
(``nscc_target`` x base RTT). No ECN and d < target: proportional increase, W += size (target - d)
/ target (up to doubling per RTT on an empty path); no ECN and d >= target: fair increase, one MTU
per RTT; ECN and d > target: multiplicative decrease W *= 1 - (d - target) / (2 d) (at most a half),
once per base RTT; ECN and d <= target: no change (UEC moves such a flow to another entropy; here
the entropies are cycled anyway). A trimmed packet's NACK takes its size off W. W stays within
[MTU, ``nscc_max_window`` x BDP]. Simplified: no quick adapt, no RCCC receiver credits, no
entropy recycling, ACKs not coalesced.
"""

from __future__ import annotations

import math

from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.layout import (
    FF_ALPHA,
    FF_ALPHA_T,
    FF_BASE_RTT,
    FF_BYTE_CTR,
    FF_INFLIGHT,
    FF_LAST_DEC,
    FF_LAST_MD,
    FF_LAST_UPD,
    FF_RATE_CAP,
    FF_RC,
    FF_RT,
    FF_SENT,
    FF_TIMER_T,
    FF_UTIL,
    FF_WIN,
    FF_WINC,
    FI_BCOUNT,
    FI_CUTS,
    FI_EPOCH,
    FI_HOPS,
    FI_INC,
    FI_STAGE,
    FI_TCOUNT,
    INT_FIELDS,
    MAX_HOPS,
    P_ALPHA_PERIOD,
    P_BYTE_RESET,
    P_CLAMP,
    P_CLAMP_ATI,
    P_ETA,
    P_F,
    P_G,
    P_GD_FACTOR,
    P_HPCC_WAI,
    P_LINE,
    P_MAX_STAGE,
    P_MIN_DEC,
    P_MIN_RATE,
    P_MTU,
    P_NSCC_MAXWIN,
    P_NSCC_TARGET,
    P_RAI,
    P_RATE_LIMIT,
    P_RHAI,
    P_RRMP,
    P_TIMER,
    PF_SENT_T,
    PI_ECN,
    PI_EPOCH,
    PI_FLOW,
    PI_HOP,
    PI_SEQ,
    PI_SIZE,
)

_INC_TIMER, _INC_BYTES = 1, 2  # FI_INC bits: the timer / the byte counter raised the rate since the last cut


@njit(cache=True)
def max_rate(FF, P, f):
    """The highest rate flow ``f`` may send at: the line rate, the NIC rate limit and the flow's own
    cap (``FF_RATE_CAP``, a background tenant's offered rate; 0: none), whichever is lowest."""
    top = P[P_LINE]
    if FF[f, FF_RATE_CAP] > 0.0:
        top = min(top, FF[f, FF_RATE_CAP])
    if P[P_RATE_LIMIT] > 0.0:
        return min(top, P[P_RATE_LIMIT])
    return top


@njit(cache=True)
def dcqcn_cnp(FF, FI, P, f, t):
    """A CNP reaches flow ``f``'s sender at ``t``: update alpha, cut the rate (rate-limited)."""
    g = P[P_G]
    if FI[f, FI_CUTS] == 0:  # the first CNP of a flow starts alpha at INITIAL_ALPHA_VALUE
        FF[f, FF_ALPHA_T] = t
    else:
        periods = math.floor((t - FF[f, FF_ALPHA_T]) / P[P_ALPHA_PERIOD])
        if periods >= 1:  # the period from FF_ALPHA_T held the previous CNP, the (periods - 1) after it none
            FF[f, FF_ALPHA] = (1.0 - g) * FF[f, FF_ALPHA] + g
            FF[f, FF_ALPHA] = FF[f, FF_ALPHA] * (1.0 - g) ** (periods - 1)
            FF[f, FF_ALPHA_T] += periods * P[P_ALPHA_PERIOD]  # the period this CNP falls in
    if t - FF[f, FF_LAST_DEC] < P[P_RRMP]:
        return
    rc = FF[f, FF_RC]
    inc = FI[f, FI_INC]
    if P[P_CLAMP] > 0 or inc & _INC_BYTES or (P[P_CLAMP_ATI] > 0 and inc & _INC_TIMER) or FI[f, FI_CUTS] == 0:
        FF[f, FF_RT] = rc
    FI[f, FI_INC] = 0
    FI[f, FI_CUTS] += 1
    cut = rc * (1.0 - FF[f, FF_ALPHA] * P[P_GD_FACTOR])
    FF[f, FF_RC] = max(cut, rc * P[P_MIN_DEC], P[P_MIN_RATE])
    FF[f, FF_LAST_DEC] = t
    FF[f, FF_TIMER_T] = t
    FF[f, FF_BYTE_CTR] = 0.0
    FI[f, FI_TCOUNT] = 0
    FI[f, FI_BCOUNT] = 0


@njit(cache=True)
def _increase(FF, FI, P, f):
    tc, bc, F = FI[f, FI_TCOUNT], FI[f, FI_BCOUNT], P[P_F]
    top = max_rate(FF, P, f)
    if max(tc, bc) < F:
        pass  # fast recovery: Rt stays
    elif min(tc, bc) >= F:
        FF[f, FF_RT] = min(top, FF[f, FF_RT] + (min(tc, bc) - F + 1) * P[P_RHAI])
    else:
        FF[f, FF_RT] = min(top, FF[f, FF_RT] + P[P_RAI])
    FF[f, FF_RC] = min(top, 0.5 * (FF[f, FF_RT] + FF[f, FF_RC]))


@njit(cache=True)
def dcqcn_timer(FF, FI, P, f, t):
    """Apply every rate-increase timer expiry of flow ``f`` up to ``t``; return the next expiry."""
    period = P[P_TIMER]
    top = max_rate(FF, P, f)
    while FF[f, FF_TIMER_T] + period <= t:
        if FF[f, FF_RC] >= top and FF[f, FF_RT] >= top:
            FF[f, FF_TIMER_T] = t  # at full rate the timer has nothing to do
            break
        FF[f, FF_TIMER_T] += period
        FI[f, FI_TCOUNT] += 1
        FI[f, FI_INC] |= _INC_TIMER
        _increase(FF, FI, P, f)
    return FF[f, FF_TIMER_T] + period


@njit(cache=True)
def dcqcn_sent(FF, FI, P, f, size):
    """Count ``size`` sent bytes toward the byte counter; increase the rate on each expiry."""
    FF[f, FF_BYTE_CTR] += size
    while FF[f, FF_BYTE_CTR] >= P[P_BYTE_RESET]:
        FF[f, FF_BYTE_CTR] -= P[P_BYTE_RESET]
        FI[f, FI_BCOUNT] += 1
        FI[f, FI_INC] |= _INC_BYTES
        _increase(FF, FI, P, f)


@njit(cache=True, inline="always")
def release(FI, FF, PI, p):
    """Packet ``p`` (acknowledged, lost or trimmed) no longer counts in its flow's window, unless the
    flow went back (go-back-N) since ``p`` left: that rewind emptied the window already."""
    f = PI[p, PI_FLOW]
    if PI[p, PI_EPOCH] == FI[f, FI_EPOCH]:
        FF[f, FF_INFLIGHT] -= PI[p, PI_SIZE]


@njit(cache=True)
def nscc_ack(FF, FI, PI, PF, P, p, t):
    """NSCC on the ACK of packet ``p`` reaching its sender at ``t``: the new window (module doc)."""
    f = PI[p, PI_FLOW]
    size = PI[p, PI_SIZE]
    release(FI, FF, PI, p)
    T = FF[f, FF_BASE_RTT]
    delay = max(t - PF[p, PF_SENT_T] - T, 0.0)
    target = P[P_NSCC_TARGET] * T
    w = FF[f, FF_WIN]
    if PI[p, PI_ECN]:
        if delay > target and t - FF[f, FF_LAST_MD] >= T:
            w *= 1.0 - 0.5 * (delay - target) / delay
            FF[f, FF_LAST_MD] = t
    elif delay < target:
        w += size * (target - delay) / target
    else:
        w += P[P_MTU] * size / w
    nscc_bound(FF, P, f, w)


@njit(cache=True)
def nscc_bound(FF, P, f, w):
    """Set flow ``f``'s NSCC window to ``w`` within [MTU, nscc_max_window x BDP]."""
    top = P[P_NSCC_MAXWIN] * max_rate(FF, P, f) * FF[f, FF_BASE_RTT]
    FF[f, FF_WIN] = min(max(w, P[P_MTU]), max(top, P[P_MTU]))


@njit(cache=True)
def _hpcc_utilization(FF, FI, PI, PF, LINT, p, f):
    """HPCC MeasureInflight: the EWMA utilisation after the ACK of packet ``p``."""
    T = FF[f, FF_BASE_RTT]
    hops = min(PI[p, PI_HOP], MAX_HOPS)
    u, tau = 0.0, T
    for h in range(min(hops, FI[f, FI_HOPS])):
        base = h * INT_FIELDS
        q, tx, ts, cap = PF[p, base], PF[p, base + 1], PF[p, base + 2], PF[p, base + 3]
        dt = ts - LINT[f, base + 2]
        if dt <= 0.0 or PF[p, base + 4] != LINT[f, base + 4]:
            continue  # no newer sample of the same link at this hop (sprayed packets take other links)
        rate = (tx - LINT[f, base + 1]) / dt
        uj = min(q, LINT[f, base]) / (cap * T) + rate / cap
        if uj > u:
            u, tau = uj, dt
    tau = min(tau, T)
    return (1.0 - tau / T) * FF[f, FF_UTIL] + tau / T * u


@njit(cache=True)
def hpcc_ack(FF, FI, PI, PF, LINT, P, p):
    """HPCC NewAck for packet ``p``: new window and pacing rate; store its INT as the reference."""
    f = PI[p, PI_FLOW]
    release(FI, FF, PI, p)
    hops = min(PI[p, PI_HOP], MAX_HOPS)
    if FI[f, FI_HOPS] > 0 and hops > 0:
        T = FF[f, FF_BASE_RTT]
        U = _hpcc_utilization(FF, FI, PI, PF, LINT, p, f)
        FF[f, FF_UTIL] = U
        update = PI[p, PI_SEQ] > FF[f, FF_LAST_UPD]
        wai = P[P_HPCC_WAI] * T
        if P[P_ETA] <= U or FI[f, FI_STAGE] >= P[P_MAX_STAGE]:
            w = FF[f, FF_WINC] / (U / P[P_ETA]) + wai
            if update:
                FI[f, FI_STAGE] = 0
        else:
            w = FF[f, FF_WINC] + wai
            if update:
                FI[f, FI_STAGE] += 1
        w = min(max(w, P[P_MTU] * 0.01), max_rate(FF, P, f) * T)
        if update:
            FF[f, FF_WINC] = w
            FF[f, FF_LAST_UPD] = FF[f, FF_SENT]
        FF[f, FF_WIN] = w
        FF[f, FF_RC] = w / T
    for k in range(hops * INT_FIELDS):
        LINT[f, k] = PF[p, k]
    FI[f, FI_HOPS] = hops
