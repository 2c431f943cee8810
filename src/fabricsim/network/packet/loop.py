"""The packet kernel's event loop and per-event handlers (layer L3); the model is described in
:mod:`fabricsim.network.packet.kernel`. Compiled with numba (``cache=True``: compiled once per
version of the package's sources, then loaded from the cache folder of
:mod:`fabricsim.network.packet.jit`).

The per-packet path (transmission done, arrival, delivery, the switch and NIC send steps, ECN,
the heap) is compiled with ``inline="always"``: numba then types one function body instead of
calls that pass a dozen arrays each (each array is unpacked into its fields and reference
counted on entry and exit; the compiled IR holds hundreds of NRT incref/decref calls). That was
most of the time per event: the sprayed k=8 fat-tree runs at about 1.9 M events/s instead of
1.2 M; compile time grows a few seconds (once per machine, then cached). Rare events (pause,
credit, CNP, ACK, wake-up) stay ordinary calls.
"""

from __future__ import annotations

import numpy as np

from fabricsim.network.packet import heap
from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.kernel import (
    _CC_DCQCN,
    _CC_HPCC,
    _CREDIT,
    _PFC,
    HIST_BINS,
    S_COLS,
    S_DELIVERED_PKTS,
    S_DROPS,
    S_END,
    S_EVENTS,
    S_MARKED,
    S_SENT_PKTS,
    _free,
    _key,
    _next_link,
    _nic_kick,
    _try_switch_tx,
)
from fabricsim.network.packet.layout import (
    EV_ACK,
    EV_ARRIVE,
    EV_BITS,
    EV_CNP,
    EV_CREDIT,
    EV_PAUSE_OFF,
    EV_PAUSE_ON,
    EV_RETX,
    EV_SAMPLE,
    EV_START,
    EV_TXDONE,
    EV_WAKE,
    FF_DELIVERED,
    FF_FINISH,
    FF_INFLIGHT,
    FF_LAST_CNP,
    FF_RC,
    FF_RET_LAT,
    FF_RETX,
    FF_SIZE,
    FF_START,
    FI_ACTIVE,
    FI_DONE,
    FI_SRC,
    LF_HDRM,
    LF_HEADROOM,
    LF_ING,
    LF_LAT,
    LF_PAUSE_START,
    LF_PAUSE_TOTAL,
    LF_QBYTES,
    LF_QMAX,
    LF_STALL_START,
    LF_STALL_TOTAL,
    LI_BUSY,
    LI_CLASS,
    LI_CREDITS,
    LI_DST,
    LI_DST_HOST,
    LI_PAUSE_FRAMES,
    LI_PAUSED,
    LI_QHEAD,
    LI_QTAIL,
    LI_SRC,
    LI_SRC_HOST,
    LI_TXPKT,
    LI_XOFF,
    P_CC,
    P_CNP_INTERVAL,
    P_HIST_BIN,
    P_LOSSLESS,
    P_PFC_ALPHA,
    P_PFC_RESUME,
    P_PFC_XOFF,
    P_RTO,
    P_SAMPLE_DT,
    P_SEED,
    PF_COLS,
    PI_COLS,
    PI_ECN,
    PI_FLOW,
    PI_INLINK,
    PI_LINK,
    PI_NEXT,
    PI_SIZE,
)
from fabricsim.network.packet.reaction import dcqcn_cnp, hpcc_ack


@njit(cache=True)
def _activate(FI, hosts, f):
    act_ptr, act_n, act, _ = hosts
    if FI[f, FI_ACTIVE]:
        return
    h = FI[f, FI_SRC]
    act[act_ptr[h] + act_n[h]] = f
    act_n[h] += 1
    FI[f, FI_ACTIVE] = 1


@njit(cache=True, inline="always")
def _kick_link(S, lk, t):
    """Restart whatever feeds link ``lk``: its host NIC or its switch egress queue."""
    LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, _LINT = S
    h = LI[lk, LI_SRC_HOST]
    if h >= 0:
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, h, t, H, meta)
    else:
        _try_switch_tx(LI, LF, PI, PF, P, lk, t, H)


@njit(cache=True, inline="always")
def _xoff(P, shared, node):
    """PFC Xoff of an ingress of ``node``: static if set, else alpha x the node's free shared buffer."""
    if P[P_PFC_XOFF] > 0.0:
        return P[P_PFC_XOFF]
    return P[P_PFC_ALPHA] * (shared[1, node] - shared[0, node])


@njit(cache=True, inline="always")
def _tx_done(S, shared, lk, t):
    """Link ``lk`` finished a packet: free its switch buffer (XON/credit upstream), send it on."""
    LI, LF, _FI, _FF, PI, _PF, P, _hosts, _uplink, _wake_t, H, _meta, _LINT = S
    p = LI[lk, LI_TXPKT]
    LI[lk, LI_BUSY] = 0
    size = PI[p, PI_SIZE]
    if LI[lk, LI_SRC_HOST] < 0:
        node = LI[lk, LI_SRC]
        inl = PI[p, PI_INLINK]
        LF[inl, LF_ING] -= size
        take = min(LF[inl, LF_HDRM], size)
        LF[inl, LF_HDRM] -= take
        shared[0, node] -= size - take
        if P[P_LOSSLESS] == _PFC and LI[inl, LI_XOFF] and LF[inl, LF_HDRM] <= 0.0:
            threshold = _xoff(P, shared, node)
            if LF[inl, LF_ING] <= max(threshold - P[P_PFC_RESUME], 0.0):
                LI[inl, LI_XOFF] = 0
                heap.push(H[0], H[1], H[2], H[3], t + LF[inl, LF_LAT], _key(EV_PAUSE_OFF, inl))
        if P[P_LOSSLESS] == _CREDIT:
            heap.push(H[0], H[1], H[2], H[3], t + LF[inl, LF_LAT], _key(EV_CREDIT, inl))
    heap.push(H[0], H[1], H[2], H[3], t + LF[lk, LF_LAT], _key(EV_ARRIVE, p))
    _kick_link(S, lk, t)


@njit(cache=True, inline="always")
def _deliver(S, stats, p, lk, t):
    """Packet ``p`` reached its receiver: count it, answer with a CNP / an ACK as the CC needs."""
    _LI, LF, FI, FF, PI, _PF, P, _hosts, _uplink, _wake_t, H, meta, _LINT = S
    f = PI[p, PI_FLOW]
    if P[P_LOSSLESS] == _CREDIT:
        heap.push(H[0], H[1], H[2], H[3], t + LF[lk, LF_LAT], _key(EV_CREDIT, lk))
    FF[f, FF_DELIVERED] += PI[p, PI_SIZE]
    stats[S_DELIVERED_PKTS] += 1
    if PI[p, PI_ECN]:
        stats[S_MARKED] += 1
        if P[P_CC] == _CC_DCQCN and t - FF[f, FF_LAST_CNP] >= P[P_CNP_INTERVAL]:
            FF[f, FF_LAST_CNP] = t
            heap.push(H[0], H[1], H[2], H[3], t + FF[f, FF_RET_LAT], _key(EV_CNP, f))
    if P[P_CC] == _CC_HPCC:
        heap.push(H[0], H[1], H[2], H[3], t + FF[f, FF_RET_LAT], _key(EV_ACK, p))
    else:
        _free(PI, meta, p)
    if FF[f, FF_DELIVERED] >= FF[f, FF_SIZE] and not FI[f, FI_DONE]:
        FI[f, FI_DONE] = 1
        FF[f, FF_FINISH] = t
        return 1
    return 0


@njit(cache=True, inline="always")
def _arrive(S, shared, stats, route, hist, p, t):
    """Packet ``p`` fully received at its link's far end; returns 1 if that finished its flow."""
    LI, LF, _FI, _FF, PI, PF, P, _hosts, _uplink, _wake_t, H, _meta, _LINT = S
    lk = PI[p, PI_LINK]
    if LI[lk, LI_DST_HOST] >= 0:
        return _deliver(S, stats, p, lk, t)
    node = LI[lk, LI_DST]
    size = PI[p, PI_SIZE]
    lossless = P[P_LOSSLESS]
    pool = shared[1, node]
    if lossless == 0 and shared[0, node] + size > pool:
        _drop(S, stats, p, t)
        return 0
    if lossless == _PFC and LI[lk, LI_XOFF]:
        if LF[lk, LF_HDRM] + size > LF[lk, LF_HEADROOM]:
            _drop(S, stats, p, t)  # headroom too small for the pause round trip
            return 0
        LF[lk, LF_HDRM] += size
    else:
        shared[0, node] += size
    LF[lk, LF_ING] += size
    threshold = _xoff(P, shared, node)
    if lossless == _PFC and not LI[lk, LI_XOFF] and LF[lk, LF_ING] - LF[lk, LF_HDRM] > threshold:
        LI[lk, LI_XOFF] = 1
        LI[lk, LI_PAUSE_FRAMES] += 1
        heap.push(H[0], H[1], H[2], H[3], t + LF[lk, LF_LAT], _key(EV_PAUSE_ON, lk))
    nl = _next_link(LI, route, PI[p, PI_FLOW], node)
    if nl < 0:
        raise RuntimeError("packet kernel: a packet reached a switch off its flow's route")
    q = LF[nl, LF_QBYTES]
    hist[LI[nl, LI_CLASS], min(int(q / P[P_HIST_BIN]), HIST_BINS - 1)] += 1
    LF[nl, LF_QMAX] = max(LF[nl, LF_QMAX], q + size)
    PI[p, PI_INLINK] = lk
    PI[p, PI_LINK] = nl
    PI[p, PI_NEXT] = -1
    tail = LI[nl, LI_QTAIL]
    if tail >= 0:
        PI[tail, PI_NEXT] = p
    else:
        LI[nl, LI_QHEAD] = p
    LI[nl, LI_QTAIL] = p
    LF[nl, LF_QBYTES] = q + size
    _try_switch_tx(LI, LF, PI, PF, P, nl, t, H)
    return 0


@njit(cache=True)
def _drop(S, stats, p, t):
    """Drop ``p``; its sender learns of the loss one retransmission timeout later."""
    H = S[10]
    stats[S_DROPS] += 1
    heap.push(H[0], H[1], H[2], H[3], t + S[6][P_RTO], _key(EV_RETX, p))


@njit(cache=True)
def _control(S, kind, arg, t):
    """Pause, resume, credit, CNP, ACK, wake-up, loss and start events."""
    LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, LINT = S
    if kind == EV_PAUSE_ON:
        LI[arg, LI_PAUSED] = 1
        LF[arg, LF_PAUSE_START] = t
    elif kind == EV_PAUSE_OFF:
        LI[arg, LI_PAUSED] = 0
        LF[arg, LF_PAUSE_TOTAL] += t - LF[arg, LF_PAUSE_START]
        _kick_link(S, arg, t)
    elif kind == EV_CREDIT:
        LI[arg, LI_CREDITS] += 1
        if LF[arg, LF_STALL_START] >= 0.0:
            LF[arg, LF_STALL_TOTAL] += t - LF[arg, LF_STALL_START]
            LF[arg, LF_STALL_START] = -1.0
        _kick_link(S, arg, t)
    elif kind == EV_CNP:
        if not FI[arg, FI_DONE]:
            dcqcn_cnp(FF, FI, P, arg, t)
    elif kind == EV_ACK:
        hpcc_ack(FF, FI, PI, PF, LINT, P, arg)
        h = FI[PI[arg, PI_FLOW], FI_SRC]
        _free(PI, meta, arg)
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, h, t, H, meta)
    elif kind == EV_WAKE:
        if t >= wake_t[arg]:
            wake_t[arg] = np.inf
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, arg, t, H, meta)
    elif kind == EV_RETX:
        f = PI[arg, PI_FLOW]
        FF[f, FF_RETX] += PI[arg, PI_SIZE]
        FF[f, FF_INFLIGHT] -= PI[arg, PI_SIZE]
        _free(PI, meta, arg)
        _activate(FI, hosts, f)
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, FI[f, FI_SRC], t, H, meta)
    elif kind == EV_START:
        _activate(FI, hosts, arg)
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, FI[arg, FI_SRC], t, H, meta)


@njit(cache=True)
def _grown_pool(PI, PF, meta):
    """Double the packet pool, threading the new rows onto the free list."""
    n = PI.shape[0]
    PI2 = np.empty((2 * n, PI_COLS), dtype=PI.dtype)
    PF2 = np.zeros((2 * n, PF_COLS), dtype=PF.dtype)
    PI2[:n] = PI
    PF2[:n] = PF
    for p in range(n, 2 * n):
        PI2[p, PI_NEXT] = p + 1 if p + 1 < 2 * n else meta[2]
    meta[2] = n
    meta[3] += n
    return PI2, PF2


@njit(cache=True)
def _sample(S, series, t):
    """Record every flow's delivered bytes and rate and every link's queue at ``t``."""
    _LI, LF, _FI, FF, _PI, _PF, P, _hosts, _uplink, _wake_t, H, meta, _LINT = S
    delivered, rate, queue = series
    k = meta[5]
    if k >= delivered.shape[0]:
        return
    delivered[k] = FF[:, FF_DELIVERED]
    rate[k] = FF[:, FF_RC]
    queue[k] = LF[:, LF_QBYTES]
    meta[5] = k + 1
    heap.push(H[0], H[1], H[2], H[3], t + P[P_SAMPLE_DT], _key(EV_SAMPLE, 0))


@njit(cache=True)
def _new_pool(size):
    """An empty packet pool of ``size`` rows (all on the free list) and the kernel's ``meta``
    counters: heap size, heap sequence, free-list head, free count, sent packets, samples."""
    PI = np.zeros((size, PI_COLS), dtype=np.int64)
    PF = np.zeros((size, PF_COLS), dtype=np.float64)
    for p in range(size):
        PI[p, PI_NEXT] = p + 1 if p + 1 < size else -1
    meta = np.zeros(6, dtype=np.int64)
    meta[3] = size
    return PI, PF, meta


@njit(cache=True)
def _schedule_starts(FI, FF, H):
    """Push every flow's start; empty flows finish at their start. Returns how many finished and
    how many must finish: the flows of finite size (an infinite one, a background tenant's, sends
    for as long as the run lasts)."""
    finished = 0
    finite = 0
    for f in range(FI.shape[0]):
        heap.push(H[0], H[1], H[2], H[3], FF[f, FF_START], _key(EV_START, f))
        if FF[f, FF_SIZE] < np.inf:
            finite += 1
        if FF[f, FF_SIZE] <= 0.0:
            FI[f, FI_DONE] = 1
            FF[f, FF_FINISH] = FF[f, FF_START]
            finished += 1
    return finished, finite


@njit(cache=True)
def run(tables, route, hosts, uplink, shared, P, samples):
    """Simulate until every flow of finite size is delivered (or nothing is left to happen); flows
    of infinite size (background) keep sending until then.

    ``tables`` = (LI, LF, FI, FF, LINT); ``route`` = (flow_ptr, flow_links, spray_rr): each
    flow's links (its routing DAG) and the spraying counters; ``hosts`` = (act_ptr, act_n, act,
    rr): per host, room for its flows' ids and round-robin state; ``uplink[h]`` the link out of
    host h; ``shared[0]`` the bytes used and ``shared[1]`` the shared pool of every node; ``P``
    the parameter vector; ``samples`` the length of the time series. Returns (stats, queue
    histogram, (delivered, rate, queue) series, rows sampled).
    """
    LI, LF, FI, FF, LINT = tables
    np.random.seed(int(P[P_SEED]))
    flows = FI.shape[0]
    PI, PF, meta = _new_pool(1024)
    cap = 4096 + 2 * flows
    H = (np.empty(cap), np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64), meta)
    wake_t = np.full(uplink.size, np.inf)
    stats = np.zeros(S_COLS)
    hist = np.zeros((3, HIST_BINS), dtype=np.int64)
    series = (np.zeros((samples, flows)), np.zeros((samples, flows)), np.zeros((samples, LI.shape[0])))
    finished, finite = _schedule_starts(FI, FF, H)
    if samples > 0:
        heap.push(H[0], H[1], H[2], meta, 0.0, _key(EV_SAMPLE, 0))
    S = (LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, LINT)
    t = 0.0
    events = 0
    while finished < finite and meta[0] > 0:
        if meta[0] + 16 >= H[0].size:
            ht, hk, hs = heap.grown(H[0], H[1], H[2])
            H = (ht, hk, hs, meta)
            S = (LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, LINT)
        if meta[3] < 4:
            PI, PF = _grown_pool(PI, PF, meta)
            S = (LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, LINT)
        t, key = heap.pop(H[0], H[1], H[2], meta)
        kind = key & ((1 << EV_BITS) - 1)
        arg = key >> EV_BITS
        events += 1
        if kind == EV_TXDONE:
            _tx_done(S, shared, arg, t)
        elif kind == EV_ARRIVE:
            finished += _arrive(S, shared, stats, route, hist, arg, t)
        elif kind == EV_SAMPLE:
            _sample(S, series, t)
        else:
            _control(S, kind, arg, t)
    for lk in range(LI.shape[0]):  # close pauses still open at the end
        if LI[lk, LI_PAUSED]:
            LF[lk, LF_PAUSE_TOTAL] += t - LF[lk, LF_PAUSE_START]
    stats[S_EVENTS] = events
    stats[S_SENT_PKTS] = meta[4]
    stats[S_END] = t
    return stats, hist, series, meta[5]
