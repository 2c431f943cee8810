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

The event loop (:func:`_events`) and the ordinary calls on the per-packet path (the NIC's send
step, the receiver's reply, a control packet's hop, the other events) are compiled without numba's
reference counting (``_nrt=False``; numba compiles their callees the same way): they allocate
nothing, yet each call and each unpacking of the state tuple counted references on every array
with atomic instructions, half the CPU time of the sprayed k=16 fat-tree (perf: NRT_incref and
NRT_decref). Without it that case runs at about 1.9 M events per CPU second instead of 0.9 M
(benchmarks/bench_packet.py). :func:`run` keeps the counting: it allocates the tables and grows
the heap and the packet pool, the loop returning to it whenever one must grow. Results are the
same bit for bit (the same events in the same order).
"""

from __future__ import annotations

import numpy as np

from fabricsim.network.packet import heap
from fabricsim.network.packet.credit import granted, pull, start_pacer
from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.kernel import (
    _CC_DCQCN,
    _CC_HPCC,
    _CC_NSCC,
    _CREDIT,
    _PFC,
    HIST_BINS,
    M_RETX_BYTES,
    M_SAMPLES,
    M_SENT_PKTS,
    M_TRIMMED,
    S_COLS,
    S_DELIVERED_PKTS,
    S_END,
    S_EVENTS,
    S_MARKED,
    S_RETX_BYTES,
    S_SENT_PKTS,
    S_TRIMMED,
    _alloc,
    _frame,
    _free,
    _key,
    _next_link,
    _nic_kick,
    _push_control,
    _try_switch_tx,
    enqueue_vc1,
    out_link_index,
    vc_next,
)
from fabricsim.network.packet.layout import (
    CTRL_ACK,
    EV_ACK,
    EV_ARRIVE,
    EV_BITS,
    EV_CNP,
    EV_CREDIT,
    EV_GRANT,
    EV_NACK,
    EV_PAUSE_OFF,
    EV_PAUSE_ON,
    EV_PULL,
    EV_RETX,
    EV_SAMPLE,
    EV_START,
    EV_TRIM_NACK,
    EV_TXDONE,
    EV_WAKE,
    FF_DELIVERED,
    FF_FINISH,
    FF_LAST_CNP,
    FF_RET_LAT,
    FF_SIZE,
    FI_ACK_CNT,
    FI_DONE,
    FI_DST,
    FI_LOST_HEAD,
    FI_SRC,
    INT_FIELDS,
    LF_BER,
    LF_CQBYTES,
    LF_CSTRIDE,
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
    LI_CREDITS_VC1,
    LI_CSTRIDE,
    LI_DST,
    LI_DST_HOST,
    LI_PAUSE_FRAMES,
    LI_PAUSED,
    LI_REV,
    LI_SRC,
    LI_SRC_HOST,
    LI_TXPKT,
    LI_XOFF,
    MAX_HOPS,
    P_ACK_BYTES,
    P_ACK_EVERY,
    P_CC,
    P_CLASS_LOSSY,
    P_CLASS_QCAP,
    P_CLASSES,
    P_CNP_BYTES,
    P_CNP_INTERVAL,
    P_CONTROL,
    P_HIST_BIN,
    P_LOSSLESS,
    P_PFC_ALPHA,
    P_PFC_RESUME,
    P_PFC_XOFF,
    P_RCCC,
    P_RTO,
    P_SEED,
    PI_CLASS,
    PI_CTRL,
    PI_ECN,
    PI_ENT,
    PI_FLOW,
    PI_HOP,
    PI_INLINK,
    PI_INVC,
    PI_LINK,
    PI_REF,
    PI_SIZE,
    PI_SNO,
    PI_TRIM,
    PI_VC,
)
from fabricsim.network.packet.losses import _activate, _corrupted, _drop, _enqueue, _forward_header, _overflow, _recover
from fabricsim.network.packet.pool import _grown_pool, _new_pool, _sample, _schedule_starts
from fabricsim.network.packet.reaction import dcqcn_cnp, hpcc_ack, nscc_ack
from fabricsim.network.packet.recovery import (
    lost_before,
    nack_due,
    receive,
)


@njit(cache=True, inline="always")
def _kick_link(S, lk, t):
    """Restart whatever feeds link ``lk``: its host NIC or its switch egress queue."""
    LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, _LINT, _rcvd = S
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
    LI, LF, _FI, _FF, PI, _PF, P, _hosts, _uplink, _wake_t, H, _meta, _LINT, _rcvd = S
    p = LI[lk, LI_TXPKT]
    LI[lk, LI_BUSY] = 0
    size = _frame(P, PI, p)
    if LI[lk, LI_SRC_HOST] < 0 and PI[p, PI_TRIM] == 0 and PI[p, PI_CTRL] == 0:  # nor headers nor control hold buffer
        node = LI[lk, LI_SRC]
        inl = PI[p, PI_INLINK]
        c = PI[p, PI_CLASS]
        ci, cf = c * LI_CSTRIDE, c * LF_CSTRIDE  # the class's column offsets
        LF[inl, LF_ING + cf] -= size
        take = min(LF[inl, LF_HDRM + cf], size)
        LF[inl, LF_HDRM + cf] -= take
        shared[0, node] -= size - take
        if P[P_LOSSLESS] == _PFC and LI[inl, LI_XOFF + ci] and LF[inl, LF_HDRM + cf] <= 0.0:
            threshold = _xoff(P, shared, node)
            if LF[inl, LF_ING + cf] <= max(threshold - P[P_PFC_RESUME], 0.0):
                LI[inl, LI_XOFF + ci] = 0  # XON for class c (a pause event's argument: link + class x links)
                heap.push(H[0], H[1], H[2], H[3], t + LF[inl, LF_LAT], _key(EV_PAUSE_OFF, inl + c * LI.shape[0]))
        if P[P_LOSSLESS] == _CREDIT:  # the credit of the VC it held on its ingress (link + VC x links)
            heap.push(H[0], H[1], H[2], H[3], t + LF[inl, LF_LAT], _key(EV_CREDIT, inl + PI[p, PI_INVC] * LI.shape[0]))
    heap.push(H[0], H[1], H[2], H[3], t + LF[lk, LF_LAT], _key(EV_ARRIVE, p))
    _kick_link(S, lk, t)


@njit(cache=True, _nrt=False)
def _reply(S, kind, arg, p, lk, t):
    """Feedback ``kind`` (an event kind with its ``arg``, or CTRL_ACK) about data packet ``p``, which
    reached its receiver over link ``lk``: a control packet back over the reverse of ``p``'s path
    (:mod:`kernel`), or, without control packets or a recorded path, the event itself one path
    latency later (a plain ACK then has no effect to carry)."""
    LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, _LINT, _rcvd = S
    f = PI[p, PI_FLOW]
    hops = PI[p, PI_HOP]
    back = LI[lk, LI_REV]
    if P[P_CONTROL] == 0.0 or hops > MAX_HOPS or back < 0:
        if kind != CTRL_ACK:
            heap.push(H[0], H[1], H[2], H[3], t + FF[f, FF_RET_LAT], _key(kind, arg))
        return
    c = _alloc(PI, meta)
    PI[c, PI_FLOW] = f
    PI[c, PI_SIZE] = int(P[P_CNP_BYTES] if kind == EV_CNP else P[P_ACK_BYTES])
    PI[c, PI_CTRL] = kind
    PI[c, PI_REF] = arg
    PI[c, PI_TRIM] = 0
    PI[c, PI_ECN] = 0
    PI[c, PI_INLINK] = -1
    PI[c, PI_ENT] = -1
    PI[c, PI_HOP] = hops
    for h in range(hops):  # the switch egress links p took, to retrace
        PF[c, h * INT_FIELDS + 4] = PF[p, h * INT_FIELDS + 4]
    _push_control(LI, PI, back, c)
    _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, LI[back, LI_SRC_HOST], t, H, meta)


@njit(cache=True, _nrt=False)
def _control_hop(S, c, lk, t):
    """Control packet ``c`` crossed link ``lk``: at the sender its event happens now; at a switch it
    takes the reverse of the previous link of its data packet's path (the first: the sender's NIC port)."""
    LI, LF, FI, FF, PI, PF, P, _hosts, uplink, _wake_t, H, meta, _LINT, _rcvd = S
    h = PI[c, PI_HOP] - 1
    nl = -1
    if LI[lk, LI_DST_HOST] < 0:
        came = int(PF[c, (h - 1) * INT_FIELDS + 4]) if h >= 1 else uplink[FI[PI[c, PI_FLOW], FI_SRC]]
        nl = LI[came, LI_REV]
    if nl < 0:  # at the sender (or, should a link have no reverse, the rest of the way as a delay)
        if PI[c, PI_CTRL] != CTRL_ACK:
            late = 0.0 if LI[lk, LI_DST_HOST] >= 0 else FF[PI[c, PI_FLOW], FF_RET_LAT]
            heap.push(H[0], H[1], H[2], H[3], t + late, _key(PI[c, PI_CTRL], PI[c, PI_REF]))
        _free(PI, meta, c)
        return
    PI[c, PI_HOP] = h
    _push_control(LI, PI, nl, c)
    _try_switch_tx(LI, LF, PI, PF, P, nl, t, H)


@njit(cache=True, inline="always")
def _deliver(S, stats, p, lk, t):
    """Packet ``p`` reached its receiver: count its new bytes, answer with a CNP / an ACK as the CC
    needs, or a NACK (a trimmed header; go-back-N: a packet beyond the flow's gap; selective
    repeat: a packet sent after one that was lost)."""
    LI, LF, FI, FF, PI, PF, P, _hosts, _uplink, _wake_t, H, meta, _LINT, rcvd = S
    f = PI[p, PI_FLOW]
    if P[P_LOSSLESS] == _CREDIT:
        heap.push(H[0], H[1], H[2], H[3], t + LF[lk, LF_LAT], _key(EV_CREDIT, lk + PI[p, PI_VC] * LI.shape[0]))
    if PI[p, PI_TRIM] > 0:
        _reply(S, EV_TRIM_NACK, p, p, lk, t)
        return 0
    got = receive(FI, FF, PI, P, rcvd, p)
    if got < 0:
        if nack_due(FI, FF, PI, P, rcvd, p):
            _reply(S, EV_NACK, f, p, lk, t)
        heap.push(H[0], H[1], H[2], H[3], t + P[P_RTO], _key(EV_RETX, p))  # its own timeout, should it be needed
        return 0
    if FI[f, FI_LOST_HEAD] >= 0:  # selective repeat: NACK the flow's packets lost before p was sent
        lost = lost_before(FI, PI, PF, f, PI[p, PI_SNO])
        if lost >= 0:
            _reply(S, EV_NACK, lost, p, lk, t)
    if got > 0:
        FF[f, FF_DELIVERED] += PI[p, PI_SIZE]
        stats[S_DELIVERED_PKTS] += 1
    if PI[p, PI_ECN]:
        stats[S_MARKED] += 1
        if P[P_CC] == _CC_DCQCN and t - FF[f, FF_LAST_CNP] >= P[P_CNP_INTERVAL]:
            FF[f, FF_LAST_CNP] = t
            _reply(S, EV_CNP, f, p, lk, t)
    if P[P_CC] == _CC_HPCC or P[P_CC] == _CC_NSCC:
        _reply(S, EV_ACK, p, p, lk, t)  # one per packet: its INT records / its RTT sample
    else:
        FI[f, FI_ACK_CNT] += 1
        if FI[f, FI_ACK_CNT] >= P[P_ACK_EVERY] or FF[f, FF_DELIVERED] >= FF[f, FF_SIZE]:
            FI[f, FI_ACK_CNT] = 0
            _reply(S, CTRL_ACK, -1, p, lk, t)
        _free(PI, meta, p)
    if FF[f, FF_DELIVERED] >= FF[f, FF_SIZE] and not FI[f, FI_DONE]:
        FI[f, FI_DONE] = 1
        FF[f, FF_FINISH] = t
        return 1
    return 0


@njit(cache=True, inline="always")
def _arrive(S, shared, stats, route, hist, p, t):
    """Packet ``p`` fully received at its link's far end; returns 1 if that finished its flow."""
    LI, LF, _FI, _FF, PI, PF, P, _hosts, _uplink, _wake_t, H, _meta, _LINT, _rcvd = S
    lk = PI[p, PI_LINK]
    if PI[p, PI_CTRL] > 0:
        _control_hop(S, p, lk, t)
        return 0
    if LF[lk, LF_BER] > 0.0 and PI[p, PI_TRIM] == 0 and _corrupted(LF[lk, LF_BER], _frame(P, PI, p)):
        if P[P_LOSSLESS] == _CREDIT:  # the receiver discards it: its buffer slot is free again
            heap.push(H[0], H[1], H[2], H[3], t + LF[lk, LF_LAT], _key(EV_CREDIT, lk + PI[p, PI_VC] * LI.shape[0]))
        _drop(S, stats, p, t)
        return 0
    if LI[lk, LI_DST_HOST] >= 0:
        return _deliver(S, stats, p, lk, t)
    node = LI[lk, LI_DST]
    if PI[p, PI_TRIM] > 0:
        _forward_header(S, route, p, lk, node, t)
        return 0
    size = _frame(P, PI, p)
    c = PI[p, PI_CLASS]
    ci, cf = c * LI_CSTRIDE, c * LF_CSTRIDE  # the class's column offsets
    lossless = P[P_LOSSLESS]
    if lossless == _PFC and P[P_CLASS_LOSSY + c] > 0.0:
        lossless = 0.0  # a lossy class under PFC: dropped when full, never paused
    pool = shared[1, node]
    nl = -1
    cap = P[P_CLASS_QCAP + c]
    if lossless == 0 and cap > 0.0:  # drop-tail per egress queue (of the class), under the shared pool
        nl = _next_link(LI, route, PI[p, PI_FLOW], node, PI[p, PI_ENT])
        if nl >= 0 and LF[nl, LF_CQBYTES + cf] + size > cap:
            _overflow(S, stats, route, p, lk, node, t)
            return 0
    if lossless == 0 and shared[0, node] + size > pool:
        _overflow(S, stats, route, p, lk, node, t)
        return 0
    if lossless == _PFC and LI[lk, LI_XOFF + ci]:
        if LF[lk, LF_HDRM + cf] + size > LF[lk, LF_HEADROOM]:
            _overflow(S, stats, route, p, lk, node, t)  # headroom too small for the pause round trip
            return 0
        LF[lk, LF_HDRM + cf] += size
    else:
        shared[0, node] += size
    LF[lk, LF_ING + cf] += size
    threshold = _xoff(P, shared, node)
    if lossless == _PFC and not LI[lk, LI_XOFF + ci] and LF[lk, LF_ING + cf] - LF[lk, LF_HDRM + cf] > threshold:
        LI[lk, LI_XOFF + ci] = 1  # per priority: only class c of the upstream link pauses
        LI[lk, LI_PAUSE_FRAMES] += 1
        heap.push(H[0], H[1], H[2], H[3], t + LF[lk, LF_LAT], _key(EV_PAUSE_ON, lk + c * LI.shape[0]))
    if nl < 0:
        nl = _next_link(LI, route, PI[p, PI_FLOW], node, PI[p, PI_ENT])
    if nl < 0:
        raise RuntimeError("packet kernel: a packet reached a switch off its flow's route")
    q = LF[nl, LF_QBYTES]
    hist[LI[nl, LI_CLASS], min(int(q / P[P_HIST_BIN]), HIST_BINS - 1)] += 1
    LF[nl, LF_QMAX] = max(LF[nl, LF_QMAX], q + size)
    PI[p, PI_INLINK] = lk
    if lossless == _CREDIT:  # the VC it held on lk (its credit returns when it leaves) and takes on nl
        PI[p, PI_INVC] = PI[p, PI_VC]
        PI[p, PI_VC] = vc_next(LI, lk, nl, PI[p, PI_VC])
    if PI[p, PI_VC] == 1:  # only under credits, on a torus
        enqueue_vc1(LI, LF, PI, P, nl, p)
    else:
        _enqueue(LI, LF, PI, P, nl, p, False)
    _try_switch_tx(LI, LF, PI, PF, P, nl, t, H)
    return 0


@njit(cache=True, _nrt=False)
def _control(S, rx, kind, arg, t):
    """Pause, resume, credit, CNP, ACK, wake-up, start and receiver-credit events (``rx``: the
    receivers, :mod:`credit`); loss recovery's go to _recover."""
    LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, LINT, _rcvd = S
    if kind == EV_PAUSE_ON or kind == EV_PAUSE_OFF:  # noqa: SIM109 (numba) arg = link + class x links
        lk, c = arg % LI.shape[0], arg // LI.shape[0]
        ci, cf = c * LI_CSTRIDE, c * LF_CSTRIDE
        if kind == EV_PAUSE_ON:
            LI[lk, LI_PAUSED + ci] = 1
            LF[lk, LF_PAUSE_START + cf] = t
        else:
            LI[lk, LI_PAUSED + ci] = 0
            LF[lk, LF_PAUSE_TOTAL] += t - LF[lk, LF_PAUSE_START + cf]
            _kick_link(S, lk, t)
    elif kind == EV_CREDIT:  # arg = link + VC x links
        lk = arg % LI.shape[0]
        LI[lk, LI_CREDITS_VC1 if arg >= LI.shape[0] else LI_CREDITS] += 1
        if LF[lk, LF_STALL_START] >= 0.0:
            LF[lk, LF_STALL_TOTAL] += t - LF[lk, LF_STALL_START]
            LF[lk, LF_STALL_START] = -1.0
        _kick_link(S, lk, t)
    elif kind == EV_CNP:
        if not FI[arg, FI_DONE]:
            dcqcn_cnp(FF, FI, P, arg, t)
    elif kind == EV_ACK:
        if P[P_CC] == _CC_NSCC:
            nscc_ack(FF, FI, PI, PF, P, arg, t)
        else:
            hpcc_ack(FF, FI, PI, PF, LINT, P, arg)
        h = FI[PI[arg, PI_FLOW], FI_SRC]
        _free(PI, meta, arg)
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, h, t, H, meta)
    elif kind == EV_WAKE:
        if t >= wake_t[arg]:
            wake_t[arg] = np.inf
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, arg, t, H, meta)
    elif kind == EV_START:
        _activate(FI, hosts, arg)
        if P[P_RCCC] > 0.0:
            start_pacer(rx, H, FI[arg, FI_DST], t)
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, FI[arg, FI_SRC], t, H, meta)
    elif kind == EV_PULL:
        pull(FI, FF, P, rx, H, arg, t)
    elif kind == EV_GRANT:
        granted(FF, P, arg)
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, FI[arg, FI_SRC], t, H, meta)
    else:
        _recover(S, kind, arg, t)


@njit(cache=True, _nrt=False)
def _events(S, shared, stats, route, hist, rx, series, finished, finite, t, events):
    """Pop and handle events until the run ends (every finite flow finished or no event left) or
    the heap or the packet pool must grow (:func:`run` grows them, which allocates, and calls again).
    Returns (time of the last event, flows finished, events handled)."""
    H, meta = S[10], S[11]
    while finished < finite and meta[0] > 0 and meta[0] + 16 < H[0].size and meta[3] >= 4:
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
            _control(S, rx, kind, arg, t)
    return t, finished, events


@njit(cache=True)
def run(tables, route, hosts, uplink, shared, P, samples):
    """Simulate until every flow of finite size is delivered (or nothing is left to happen); flows
    of infinite size (background) keep sending until then.

    ``tables`` = (LI, LF, FI, FF, LINT, rcvd, rx): the state tables, the receive map and the
    receivers (rx_ptr, rx_flows, rx_rr, rx_on: per host its flows and its credit pacer, see
    :mod:`credit`); ``route`` = (flow_ptr, flow_links, spray_rr): each flow's links (its routing
    DAG) and the spraying counters; ``hosts`` = (act_ptr, act_n, act, rr): per host, room for its
    flows' ids and round-robin state; ``uplink[h]`` the link out of host h; ``shared[0]`` the
    bytes used and ``shared[1]`` the shared pool of every node; ``P`` the parameter vector;
    ``samples`` the length of the time series. Returns (stats, queue
    histogram, (delivered, rate, queue) series, rows sampled).
    """
    LI, LF, FI, FF, LINT, rcvd, rx = tables
    order, order_src = out_link_index(LI, route[0], route[1])  # each flow's out-links per node (_next_link)
    route = (route[0], route[1], route[2], order, order_src)
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
    S = (LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, LINT, rcvd)
    t = 0.0
    events = np.int64(0)  # not the literal 0: numba would compile _events for Literal[int](0) and again for int64
    while finished < finite and meta[0] > 0:
        if meta[0] + 16 >= H[0].size:
            ht, hk, hs = heap.grown(H[0], H[1], H[2])
            H = (ht, hk, hs, meta)
            S = (LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, LINT, rcvd)
        if meta[3] < 4:
            PI, PF = _grown_pool(PI, PF, meta)
            S = (LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, LINT, rcvd)
        t, finished, events = _events(S, shared, stats, route, hist, rx, series, finished, finite, t, events)
    for lk in range(LI.shape[0]):  # close pauses still open at the end
        for c in range(int(P[P_CLASSES])):
            ci, cf = c * LI_CSTRIDE, c * LF_CSTRIDE
            if LI[lk, LI_PAUSED + ci]:
                LF[lk, LF_PAUSE_TOTAL] += t - LF[lk, LF_PAUSE_START + cf]
    stats[S_EVENTS] = events
    stats[S_SENT_PKTS] = meta[M_SENT_PKTS]
    stats[S_RETX_BYTES] = meta[M_RETX_BYTES]
    stats[S_TRIMMED] = meta[M_TRIMMED]
    stats[S_END] = t
    return stats, hist, series, meta[M_SAMPLES]
