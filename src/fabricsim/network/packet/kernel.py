"""The compiled packet-level discrete-event kernel (layer L3).

Packets of at most MTU bytes cross directed links. Every link has an output FIFO at its upstream
node; a switch's queues draw on one shared buffer (``pool[node]`` bytes), accounted per ingress
link for PFC. A NIC has no queue: when its uplink is free it picks, round robin, the next of its
active flows that pacing (the CC rate) and the window (HPCC) allow, so a paused NIC simply stops.

* ECN: a packet leaving a switch egress queue that still holds q bytes is marked with probability 0 below
  Kmin, Pmax (q - Kmin) / (Kmax - Kmin) up to Kmax, 1 above (DCQCN's RED-like marking).
* PFC (lossless=1): when an ingress link's bytes in the switch exceed the dynamic threshold
  alpha x (free shared buffer) (the dynamic-threshold rule of the HPCC repository's switch MMU),
  XOFF travels back over the link (one link latency); later packets land in the ingress's
  headroom; XON follows when it drains ``resume`` bytes below the threshold. Pausing a switch's
  egress fills its own ingresses, so pauses propagate hop by hop to the senders.
* Credits (lossless=2): a link sends only with a free buffer slot at its downstream end; a slot
  returns (one link latency later) when the packet leaves that node. InfiniBand's scheme.
* Lossy (lossless=0): a packet that does not fit in the shared buffer is dropped and resent by its
  sender after ``rto`` s (selective retransmission; bytes delivered still equal bytes sent).
* Feedback (CNPs, HPCC ACKs) returns to the sender after the path's propagation latency; control
  frames are not queued (a stated simplification: they ride a strict-priority class).

Spraying needs nothing special: a flow's links are its routing DAG, and a switch picks among the
flow's out-links at that node in round-robin order, per flow and switch (one path under
ECMP/adaptive). Reordering is tolerated: the receiver counts bytes.
"""

from __future__ import annotations

import numpy as np

from fabricsim.network.packet import heap
from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.layout import (
    EV_BITS,
    EV_TXDONE,
    EV_WAKE,
    FF_FIRST_TX,
    FF_INFLIGHT,
    FF_LAST_SIZE,
    FF_LAST_TX,
    FF_RC,
    FF_RETX,
    FF_SENT,
    FF_SIZE,
    FF_WIN,
    FI_ACTIVE,
    INT_FIELDS,
    LF_CAP,
    LF_QBYTES,
    LF_STALL_START,
    LF_TXBYTES,
    LI_BUSY,
    LI_CREDITS,
    LI_PAUSED,
    LI_QHEAD,
    LI_QTAIL,
    LI_SRC,
    LI_SRC_HOST,
    LI_TXPKT,
    MAX_HOPS,
    P_CC,
    P_KMAX,
    P_KMIN,
    P_LINE,
    P_LOSSLESS,
    P_MTU,
    P_PMAX,
    PI_ECN,
    PI_FLOW,
    PI_HOP,
    PI_INLINK,
    PI_LINK,
    PI_NEXT,
    PI_SEQ,
    PI_SIZE,
)
from fabricsim.network.packet.reaction import dcqcn_sent, dcqcn_timer, max_rate

# stats vector indices (returned to Python)
S_EVENTS, S_DROPS, S_MARKED, S_DELIVERED_PKTS, S_SENT_PKTS, S_END = 0, 1, 2, 3, 4, 5
S_COLS = 6
HIST_BINS = 4096  # queue-length histogram bins per link class (bin width P_HIST_BIN: params.hist_bin_bytes)
_CC_DCQCN, _CC_HPCC = 1, 2
_PFC, _CREDIT = 1, 2


@njit(cache=True, inline="always")
def _key(kind, arg):
    return (arg << EV_BITS) | kind


@njit(cache=True, inline="always")
def _alloc(PI, meta):
    p = meta[2]
    meta[2] = PI[p, PI_NEXT]
    meta[3] -= 1
    return p


@njit(cache=True, inline="always")
def _free(PI, meta, p):
    PI[p, PI_NEXT] = meta[2]
    meta[2] = p
    meta[3] += 1


@njit(cache=True, inline="always")
def _start_tx(LI, LF, PI, PF, lk, p, t, H):
    """Put packet ``p`` on the wire of link ``lk`` at ``t``; record its INT if it leaves a switch."""
    size = PI[p, PI_SIZE]
    LI[lk, LI_BUSY] = 1
    LI[lk, LI_TXPKT] = p
    if LI[lk, LI_SRC_HOST] < 0:
        h = PI[p, PI_HOP]
        if h < MAX_HOPS:
            base = h * INT_FIELDS
            PF[p, base] = LF[lk, LF_QBYTES]
            PF[p, base + 1] = LF[lk, LF_TXBYTES]
            PF[p, base + 2] = t
            PF[p, base + 3] = LF[lk, LF_CAP]
            PF[p, base + 4] = lk
        PI[p, PI_HOP] = h + 1
    LF[lk, LF_TXBYTES] += size
    heap.push(H[0], H[1], H[2], H[3], t + size / LF[lk, LF_CAP], _key(EV_TXDONE, lk))


@njit(cache=True, inline="always")
def _mark(LF, P, lk):
    """ECN decision for a packet joining egress ``lk`` (RED-like, DCQCN's Kmin/Kmax/Pmax)."""
    q = LF[lk, LF_QBYTES]
    if q <= P[P_KMIN]:
        return 0
    if q > P[P_KMAX]:
        return 1
    prob = P[P_PMAX] * (q - P[P_KMIN]) / max(P[P_KMAX] - P[P_KMIN], 1e-30)
    return 1 if np.random.random() < prob else 0


@njit(cache=True, inline="always")
def _try_switch_tx(LI, LF, PI, PF, P, lk, t, H):
    """Start the next queued packet of switch egress ``lk`` if it is free, unpaused and has credit."""
    if LI[lk, LI_BUSY] or LI[lk, LI_PAUSED] or LI[lk, LI_QHEAD] < 0:
        return
    if P[P_LOSSLESS] == _CREDIT and LI[lk, LI_CREDITS] <= 0:
        if LF[lk, LF_STALL_START] < 0:
            LF[lk, LF_STALL_START] = t
        return
    p = LI[lk, LI_QHEAD]
    LI[lk, LI_QHEAD] = PI[p, PI_NEXT]
    if LI[lk, LI_QHEAD] < 0:
        LI[lk, LI_QTAIL] = -1
    LF[lk, LF_QBYTES] -= PI[p, PI_SIZE]
    if _mark(LF, P, lk):  # marked at dequeue, as the HPCC repository's switch does
        PI[p, PI_ECN] = 1
    LI[lk, LI_CREDITS] -= 1
    _start_tx(LI, LF, PI, PF, lk, p, t, H)


@njit(cache=True, inline="always")
def _eligible_at(FF, FI, P, f, t):
    """Earliest time flow ``f`` may send its next packet (inf: blocked until an ACK)."""
    if FF[f, FF_RETX] <= 0.0 and FF[f, FF_SENT] >= FF[f, FF_SIZE]:
        return np.inf
    cc = P[P_CC]
    if cc == _CC_HPCC and FF[f, FF_INFLIGHT] >= FF[f, FF_WIN]:
        return np.inf
    next_timer = np.inf
    if cc == _CC_DCQCN:
        next_timer = dcqcn_timer(FF, FI, P, f, t)
    rate = min(FF[f, FF_RC], max_rate(FF, P, f))
    if rate >= P[P_LINE] or FF[f, FF_LAST_TX] < 0:
        return t  # at line rate the NIC's serialisation is the pacing
    te = FF[f, FF_LAST_TX] + FF[f, FF_LAST_SIZE] / rate
    if te <= t:
        return t
    return min(te, next_timer)


@njit(cache=True, inline="always")
def _pick_flow(FI, FF, P, hosts, h, t):
    """Round-robin choice of host ``h``'s next sendable flow; (-1, earliest wake) if none now."""
    act_ptr, act_n, act, rr = hosts
    n = act_n[h]
    base = act_ptr[h]
    earliest = np.inf
    i = 0
    while i < n:
        slot = (rr[h] + i) % n
        f = act[base + slot]
        if FF[f, FF_RETX] <= 0.0 and FF[f, FF_SENT] >= FF[f, FF_SIZE]:
            n -= 1  # nothing left to send: drop it from the active list (swap-remove)
            act[base + slot] = act[base + n]
            act_n[h] = n
            FI[f, FI_ACTIVE] = 0
            continue
        te = _eligible_at(FF, FI, P, f, t)
        if te <= t:
            rr[h] = (slot + 1) % max(n, 1)
            return f, t
        earliest = min(earliest, te)
        i += 1
    return -1, earliest


@njit(cache=True)
def _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, h, t, H, meta):
    """If host ``h``'s uplink is free, send one packet of its next eligible flow (or set a wake-up)."""
    lk = uplink[h]
    if LI[lk, LI_BUSY] or LI[lk, LI_PAUSED]:
        return
    if P[P_LOSSLESS] == _CREDIT and LI[lk, LI_CREDITS] <= 0:
        return
    f, when = _pick_flow(FI, FF, P, hosts, h, t)
    if f < 0:
        if when < wake_t[h]:
            wake_t[h] = when
            heap.push(H[0], H[1], H[2], H[3], when, _key(EV_WAKE, h))
        return
    mtu = P[P_MTU]
    if FF[f, FF_RETX] > 0.0:
        size = min(mtu, FF[f, FF_RETX])
        FF[f, FF_RETX] -= size
    else:
        size = min(mtu, FF[f, FF_SIZE] - FF[f, FF_SENT])
        FF[f, FF_SENT] += size
    if FF[f, FF_FIRST_TX] < 0:
        FF[f, FF_FIRST_TX] = t
    p = _alloc(PI, meta)
    PI[p, PI_FLOW] = f
    PI[p, PI_SIZE] = int(size)
    PI[p, PI_LINK] = lk
    PI[p, PI_INLINK] = -1
    PI[p, PI_ECN] = 0
    PI[p, PI_HOP] = 0
    PI[p, PI_NEXT] = -1
    PI[p, PI_SEQ] = int(FF[f, FF_SENT])
    FF[f, FF_INFLIGHT] += size
    FF[f, FF_LAST_TX] = t
    FF[f, FF_LAST_SIZE] = size
    if P[P_CC] == _CC_DCQCN:
        dcqcn_sent(FF, FI, P, f, size)
    LI[lk, LI_CREDITS] -= 1
    meta[4] += 1
    _start_tx(LI, LF, PI, PF, lk, p, t, H)


@njit(cache=True)
def _next_link(LI, route, f, node):
    """The flow's out-link at ``node``: its only one, or, when sprayed, the next in round-robin
    order among the flow's equal-cost out-links there (one counter per flow and switch, kept in
    ``route[2]`` at the flow's first out-link of that switch; it starts at a seeded offset)."""
    flow_ptr, flow_links, spray_rr = route
    count = 0
    first = -1
    for i in range(flow_ptr[f], flow_ptr[f + 1]):
        if LI[flow_links[i], LI_SRC] == node:
            if count == 0:
                first = i
            count += 1
    if count <= 1:
        return flow_links[first] if first >= 0 else -1
    pick = spray_rr[first] % count
    spray_rr[first] += 1
    for i in range(first, flow_ptr[f + 1]):
        if LI[flow_links[i], LI_SRC] == node:
            if pick == 0:
                return flow_links[i]
            pick -= 1
    return -1
