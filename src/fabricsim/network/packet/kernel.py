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
  returns (one link latency later) when the packet leaves that node. InfiniBand's scheme. On a
  torus the wraparound rings make the buffers' dependencies cyclic, and one buffer per link can
  deadlock (every buffer of a ring full of packets waiting for the next); so a torus link has two
  virtual channels with a dateline (Dally & Seitz, "Deadlock-free message routing in multiprocessor
  interconnection networks", IEEE Trans. Computers 1987; Dally & Towles, "Principles and Practices
  of Interconnection Networks", ch. 14; InfiniBand's SL-to-VL tables do this on tori): a packet
  enters each dimension on VC 0 and moves to VC 1 when it crosses the dimension's dateline (its
  wraparound link, ``LI_DATELINE``), so neither VC's dependencies close a ring. Each VC has its own
  FIFO at the egress (``LI_QHEAD`` / ``LI_VQHEAD``) and its own credits (``LI_CREDITS`` /
  ``LI_CREDITS_VC1``; a credit event's argument is link + VC x links); the egress alternates
  between the VCs that have a packet and a credit (:func:`_try_vc_tx`). Off a torus every packet
  stays on VC 0 and nothing changes.
* Lossy (lossless=0): a packet that does not fit in the shared buffer is dropped (or, with
  ``trimming``, cut to its headers and forwarded first); its sender recovers it by go-back-N or
  selective repeat (:mod:`recovery`, :mod:`losses`); with a bit-error rate any link may corrupt a
  packet, in every mode. Receivers count each byte once (a map of the packets received).
* Headers: a data packet's frame is its payload (``PI_SIZE``) + ``P_HEADER`` bytes (what crosses
  the links and fills the buffers; a trimmed packet is ``trim_bytes`` in all) and it holds its link
  for ``P_GAP`` bytes more (Ethernet's preamble and inter-frame gap); see params.HEADERS.
* Control packets (``control_packets`` 1, the default): ACKs (HPCC's and NSCC's per packet, plain
  ones per ``ack_every`` packets otherwise), NACKs, trim NACKs and CNPs are frames of their own
  sizes (params.CONTROL) that return to the sender over the reverse of the data packet's path (the
  ``LI_REV`` of each link it crossed, recorded in its INT link ids), through every egress on the way:
  each link serves its control queue first (strict priority) and never pauses it or asks it for
  credit, and control frames hold no switch buffer (a control class with its own, ample buffer;
  they are neither dropped nor corrupted). They share the links' capacity and latency with the data.
  With ``control_packets`` 0, or a path of more than MAX_HOPS switch hops, the feedback arrives
  after the path's propagation latency instead (the earlier shortcut).
* Traffic classes (``P_CLASSES`` > 1; params module doc): a data packet carries its flow's class
  (``PI_CLASS``); every egress keeps one FIFO per class (``LI_QHEAD + c * LI_CSTRIDE``) and picks between them by
  strict priority or deficit round robin (:func:`_pick_class`); ECN and a lossy class's drop-tail cap
  look at the class's own queue. PFC counts each ingress per class (``LF_ING + c * LF_CSTRIDE``) and pauses only
  that class upstream (``LI_PAUSED + c * LI_CSTRIDE``; a pause event's argument is link + class x links), so a
  congested class does not block another on the same link. With one class every step is the one
  before classes existed (the same results, bit for bit).

Spraying needs nothing special: a flow's links are its routing DAG, and a switch picks among the
flow's out-links at that node in round-robin order, per flow and switch, or by a hash of the
packet's entropy value (``entropies``; one path under ECMP/adaptive). Reordering is tolerated: the
receiver places out-of-order packets directly. Window-based senders (HPCC, NSCC) and receiver
credits (``rccc``, :mod:`credit`) gate what a NIC may send.
"""

from __future__ import annotations

import numpy as np

from fabricsim.network.packet import heap
from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.layout import (
    EV_BITS,
    EV_TXDONE,
    EV_WAKE,
    FF_CREDIT,
    FF_FIRST_TX,
    FF_HIGH,
    FF_INFLIGHT,
    FF_LAST_SIZE,
    FF_LAST_TX,
    FF_RC,
    FF_RETX,
    FF_SENT,
    FF_SIZE,
    FF_WIN,
    FI_ACTIVE,
    FI_CLASS,
    FI_ENT_NEXT,
    FI_EPOCH,
    FI_RQ_HEAD,
    FI_RQ_TAIL,
    INT_FIELDS,
    LF_CAP,
    LF_CQBYTES,
    LF_CSTRIDE,
    LF_DEFICIT,
    LF_QBYTES,
    LF_STALL_START,
    LF_TXBYTES,
    LI_BUSY,
    LI_CQHEAD,
    LI_CQTAIL,
    LI_CREDITS,
    LI_CREDITS_VC1,
    LI_CSTRIDE,
    LI_DATELINE,
    LI_DIM,
    LI_PAUSED,
    LI_QHEAD,
    LI_QTAIL,
    LI_RR,
    LI_SRC,
    LI_SRC_HOST,
    LI_TXPKT,
    LI_VQHEAD,
    LI_VQTAIL,
    LI_VRR,
    MAX_CLASSES,
    MAX_HOPS,
    P_CC,
    P_CLASS_QUANTUM,
    P_CLASS_SCHED,
    P_CLASSES,
    P_ENTROPIES,
    P_GAP,
    P_HEADER,
    P_KMAX,
    P_KMIN,
    P_LINE,
    P_LOSSLESS,
    P_MTU,
    P_PMAX,
    P_RCCC,
    PF_SENT_T,
    PI_CLASS,
    PI_CTRL,
    PI_ECN,
    PI_ENT,
    PI_EPOCH,
    PI_FLOW,
    PI_HOP,
    PI_INLINK,
    PI_INVC,
    PI_LINK,
    PI_NEXT,
    PI_OFF,
    PI_SEQ,
    PI_SIZE,
    PI_SNO,
    PI_TRIM,
    PI_VC,
)
from fabricsim.network.packet.reaction import dcqcn_sent, dcqcn_timer, max_rate

# stats vector indices (returned to Python)
S_EVENTS, S_DROPS, S_MARKED, S_DELIVERED_PKTS, S_SENT_PKTS, S_END = 0, 1, 2, 3, 4, 5
S_RETX_BYTES, S_TRIMMED = 6, 7  # bytes sent again (any loss recovery); packets trimmed by switches
S_CLASS_DROPS = 8  # + c: drops of traffic class c (a block of MAX_CLASSES)
S_COLS = S_CLASS_DROPS + MAX_CLASSES
HIST_BINS = 4096  # queue-length histogram bins per link class (bin width P_HIST_BIN: params.hist_bin_bytes)
_CC_DCQCN, _CC_HPCC, _CC_NSCC = 1, 2, 3
_PFC, _CREDIT = 1, 2
_GO_BACK_N, _SELECTIVE = 0, 1  # P_LOSS_RECOVERY
# meta[] counters past the heap's and the pool's (see pool._new_pool)
M_SENT_PKTS, M_SAMPLES, M_RETX_BYTES, M_TRIMMED = 4, 5, 6, 7
META_COLS = 8


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
def _frame(P, PI, p):
    """Bytes of packet ``p``'s frame: payload + headers (a trimmed or control packet: its size alone)."""
    if PI[p, PI_TRIM] > 0 or PI[p, PI_CTRL] > 0:
        return float(PI[p, PI_SIZE])
    return PI[p, PI_SIZE] + P[P_HEADER]


@njit(cache=True, inline="always")
def _start_tx(LI, LF, PI, PF, P, lk, p, t, H):
    """Put packet ``p`` on the wire of link ``lk`` at ``t`` (its frame and the gap after it); record
    its INT if it leaves a switch."""
    size = _frame(P, PI, p) + P[P_GAP]
    LI[lk, LI_BUSY] = 1
    LI[lk, LI_TXPKT] = p
    if LI[lk, LI_SRC_HOST] < 0 and PI[p, PI_CTRL] == 0:  # a control packet keeps the path it carries
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
def _mark(P, q):
    """ECN decision for a packet leaving an egress queue (of its class) that still holds ``q`` bytes
    (RED-like, DCQCN's Kmin/Kmax/Pmax)."""
    if q <= P[P_KMIN]:
        return 0
    if q > P[P_KMAX]:
        return 1
    prob = P[P_PMAX] * (q - P[P_KMIN]) / max(P[P_KMAX] - P[P_KMIN], 1e-30)
    return 1 if np.random.random() < prob else 0


@njit(cache=True, inline="always")
def append_packet(PI, A, row, head_col, tail_col, p):
    """Append packet ``p`` to the list linked through ``PI_NEXT`` whose first and last packets are
    ``A[row, head_col]`` and ``A[row, tail_col]`` (-1: empty): a link's queue, a flow's resends."""
    PI[p, PI_NEXT] = -1
    tail = A[row, tail_col]
    if tail >= 0:
        PI[tail, PI_NEXT] = p
    else:
        A[row, head_col] = p
    A[row, tail_col] = p


@njit(cache=True, inline="always")
def _push_control(LI, PI, lk, c):
    """Append control packet ``c`` to link ``lk``'s control queue."""
    PI[c, PI_LINK] = lk
    append_packet(PI, LI, lk, LI_CQHEAD, LI_CQTAIL, c)


@njit(cache=True, inline="always")
def _send_control(LI, LF, PI, PF, P, lk, t, H):
    """If link ``lk`` is free and has a control packet queued, start it (strict priority; no pause,
    no credit: the control class); 1 if it did."""
    c = LI[lk, LI_CQHEAD]
    if c < 0 or LI[lk, LI_BUSY]:
        return 0
    LI[lk, LI_CQHEAD] = PI[c, PI_NEXT]
    if LI[lk, LI_CQHEAD] < 0:
        LI[lk, LI_CQTAIL] = -1
    _start_tx(LI, LF, PI, PF, P, lk, c, t, H)
    return 1


@njit(cache=True, inline="always")
def _pick_class(LI, LF, PI, P, lk):
    """The traffic class whose head packet egress ``lk`` sends next (-1: none may send): among the
    classes with a queued packet and no PFC pause, the first (strict priority, class 0 highest) or
    by deficit round robin (Shreedhar & Varghese, SIGCOMM'95): the class whose turn it is sends while
    its deficit covers its head frame; a turn adds its quantum (``P_CLASS_QUANTUM``, at least a
    full frame, so a class sends at least one packet per turn); an empty queue's deficit resets."""
    n = int(P[P_CLASSES])
    ready = False
    for c in range(n):
        if LI[lk, LI_QHEAD + c * LI_CSTRIDE] >= 0 and not LI[lk, LI_PAUSED + c * LI_CSTRIDE]:
            if P[P_CLASS_SCHED] == 0.0:
                return c
            ready = True
    if not ready:
        return -1
    for _ in range(n + 1):  # a ready class is at most n turns away, and its turn lets it send
        c = LI[lk, LI_RR]
        head = LI[lk, LI_QHEAD + c * LI_CSTRIDE]
        if head >= 0 and not LI[lk, LI_PAUSED + c * LI_CSTRIDE]:
            size = _frame(P, PI, head)
            if LF[lk, LF_DEFICIT + c * LF_CSTRIDE] >= size:
                LF[lk, LF_DEFICIT + c * LF_CSTRIDE] -= size
                return c
        elif head < 0:
            LF[lk, LF_DEFICIT + c * LF_CSTRIDE] = 0.0
        c = (c + 1) % n
        LI[lk, LI_RR] = c
        if LI[lk, LI_QHEAD + c * LI_CSTRIDE] >= 0 and not LI[lk, LI_PAUSED + c * LI_CSTRIDE]:
            LF[lk, LF_DEFICIT + c * LF_CSTRIDE] += P[P_CLASS_QUANTUM + c]
    return -1


@njit(cache=True, inline="always")
def _try_switch_tx(LI, LF, PI, PF, P, lk, t, H):
    """Start the next queued packet of switch egress ``lk`` if it is free: a control packet first,
    else the head of a data FIFO (one per traffic class, :func:`_pick_class`) whose class is
    unpaused, if the link has credit."""
    if LI[lk, LI_CQHEAD] >= 0 and _send_control(LI, LF, PI, PF, P, lk, t, H):
        return
    if LI[lk, LI_BUSY]:
        return
    if LI[lk, LI_VQHEAD] >= 0:  # a VC-1 packet waits (credits on a torus): both VCs compete
        _try_vc_tx(LI, LF, PI, PF, P, lk, t, H)
        return
    c = 0
    if P[P_CLASSES] > 1.0:
        c = _pick_class(LI, LF, PI, P, lk)
        if c < 0:
            return
    elif LI[lk, LI_PAUSED] or LI[lk, LI_QHEAD] < 0:
        return
    if P[P_LOSSLESS] == _CREDIT and LI[lk, LI_CREDITS] <= 0:
        if LF[lk, LF_STALL_START] < 0:
            LF[lk, LF_STALL_START] = t
        return
    p = LI[lk, LI_QHEAD + c * LI_CSTRIDE]
    LI[lk, LI_QHEAD + c * LI_CSTRIDE] = PI[p, PI_NEXT]
    if LI[lk, LI_QHEAD + c * LI_CSTRIDE] < 0:
        LI[lk, LI_QTAIL + c * LI_CSTRIDE] = -1
    size = _frame(P, PI, p)
    LF[lk, LF_QBYTES] -= size
    LF[lk, LF_CQBYTES + c * LF_CSTRIDE] -= size
    if _mark(P, LF[lk, LF_CQBYTES + c * LF_CSTRIDE]):  # marked at dequeue, as the HPCC repository's switch does
        PI[p, PI_ECN] = 1
    LI[lk, LI_CREDITS] -= 1
    _start_tx(LI, LF, PI, PF, P, lk, p, t, H)


@njit(cache=True, inline="always")
def _try_vc_tx(LI, LF, PI, PF, P, lk, t, H):
    """Credits on a torus, VC 1's FIFO not empty: start the head of a VC that has a credit, the two
    taking turns when both can (one traffic class: credits take one)."""
    v0 = LI[lk, LI_QHEAD] >= 0 and LI[lk, LI_CREDITS] > 0
    v1 = LI[lk, LI_CREDITS_VC1] > 0
    if not (v0 or v1):
        if LF[lk, LF_STALL_START] < 0:
            LF[lk, LF_STALL_START] = t
        return
    vc = 1 if v1 and (not v0 or LI[lk, LI_VRR] == 1) else 0
    LI[lk, LI_VRR] = 1 - vc
    head, tail, credits = (LI_VQHEAD, LI_VQTAIL, LI_CREDITS_VC1) if vc == 1 else (LI_QHEAD, LI_QTAIL, LI_CREDITS)
    p = LI[lk, head]
    LI[lk, head] = PI[p, PI_NEXT]
    if LI[lk, head] < 0:
        LI[lk, tail] = -1
    size = _frame(P, PI, p)
    LF[lk, LF_QBYTES] -= size
    LF[lk, LF_CQBYTES] -= size
    if _mark(P, LF[lk, LF_CQBYTES]):
        PI[p, PI_ECN] = 1
    LI[lk, credits] -= 1
    _start_tx(LI, LF, PI, PF, P, lk, p, t, H)


@njit(cache=True, inline="always")
def vc_next(LI, lk, nl, vc):
    """The VC a packet that came over link ``lk`` on ``vc`` takes on ``nl``: 1 on a dateline and
    after it in the same dimension, 0 entering a dimension and off a torus."""
    d = LI[nl, LI_DIM]
    if d < 0:
        return 0
    if LI[nl, LI_DATELINE]:
        return 1
    return vc if LI[lk, LI_DIM] == d else 0


@njit(cache=True, inline="always")
def enqueue_vc1(LI, LF, PI, P, nl, p):
    """Append packet ``p`` (one traffic class, VC 1) to egress ``nl``'s VC-1 FIFO."""
    PI[p, PI_LINK] = nl
    append_packet(PI, LI, nl, LI_VQHEAD, LI_VQTAIL, p)
    size = _frame(P, PI, p)
    LF[nl, LF_QBYTES] += size
    LF[nl, LF_CQBYTES] += size


@njit(cache=True, inline="always")
def _eligible_at(FF, FI, P, f, t):
    """Earliest time flow ``f`` may send its next packet (inf: blocked until an ACK)."""
    if FF[f, FF_RETX] <= 0.0 and FF[f, FF_SENT] >= FF[f, FF_SIZE]:
        return np.inf
    if P[P_RCCC] > 0.0 and FF[f, FF_CREDIT] <= 0.0:
        return np.inf  # waits for the receiver's credit
    cc = P[P_CC]
    if (cc == _CC_HPCC or cc == _CC_NSCC) and FF[f, FF_INFLIGHT] >= FF[f, FF_WIN]:  # noqa: SIM109 (numba, float cc)
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
def _pick_flow(LI, FI, FF, P, hosts, h, lk, only, t):
    """Round-robin choice of host ``h``'s next sendable flow (of traffic class ``only``, or any when
    -1; none of a class its port ``lk`` is paused for); (-1, earliest wake) if none now."""
    act_ptr, act_n, act, rr = hosts[0], hosts[1], hosts[2], hosts[3]
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
        fc = FI[f, FI_CLASS]
        if P[P_CLASSES] > 1.0 and (LI[lk, LI_PAUSED + fc * LI_CSTRIDE] or (only >= 0 and fc != only)):
            i += 1  # its class is paused (PFC's XON kicks the NIC again) or not the one asked for
            continue
        te = _eligible_at(FF, FI, P, f, t)
        if te <= t:
            rr[h] = (slot + 1) % max(n, 1)
            return f, t
        earliest = min(earliest, te)
        i += 1
    return -1, earliest


@njit(cache=True, inline="always")
def _next_payload(FI, FF, PI, P, f, meta):
    """(size, offset) of flow ``f``'s next packet: the head of its retransmission list if any (a packet
    lost under selective repeat or trimmed), else the next new bytes from ``FF_SENT`` (which a
    go-back-N rewind moves back)."""
    q = FI[f, FI_RQ_HEAD]
    if FF[f, FF_RETX] > 0.0 and q >= 0:
        FI[f, FI_RQ_HEAD] = PI[q, PI_NEXT]
        if FI[f, FI_RQ_HEAD] < 0:
            FI[f, FI_RQ_TAIL] = -1
        size, off = float(PI[q, PI_SIZE]), float(PI[q, PI_OFF])
        FF[f, FF_RETX] -= size
        _free(PI, meta, q)
        return size, off
    off = FF[f, FF_SENT]
    size = min(P[P_MTU], FF[f, FF_SIZE] - off)
    FF[f, FF_SENT] = off + size
    return size, off


@njit(cache=True, _nrt=False)
def _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, h, t, H, meta):
    """If host ``h``'s uplink is free, send its next control packet, else one packet of its next
    eligible flow (or set a wake-up). With several traffic classes a paused class's flows wait and,
    under strict priority, a class sends only when no higher one can; under DWRR the NIC serves its
    flows round robin (the class weights apply at switch egresses)."""
    lk = uplink[h]
    if LI[lk, LI_CQHEAD] >= 0 and _send_control(LI, LF, PI, PF, P, lk, t, H):
        return
    if LI[lk, LI_BUSY] or (P[P_CLASSES] == 1.0 and LI[lk, LI_PAUSED]):
        return
    if P[P_LOSSLESS] == _CREDIT and LI[lk, LI_CREDITS] <= 0:
        return
    if P[P_CLASSES] > 1.0 and P[P_CLASS_SCHED] == 0.0:
        f, when = -1, np.inf
        for c in range(int(P[P_CLASSES])):
            f, w = _pick_flow(LI, FI, FF, P, hosts, h, lk, c, t)
            when = min(when, w)
            if f >= 0:
                break
    else:
        f, when = _pick_flow(LI, FI, FF, P, hosts, h, lk, -1, t)
    if f < 0:
        if when < wake_t[h]:
            wake_t[h] = when
            heap.push(H[0], H[1], H[2], H[3], when, _key(EV_WAKE, h))
        return
    size, off = _next_payload(FI, FF, PI, P, f, meta)
    if P[P_RCCC] > 0.0:
        FF[f, FF_CREDIT] -= size
    if off < FF[f, FF_HIGH]:
        meta[M_RETX_BYTES] += int(size)  # sent before: a retransmission (selective, trimmed or go-back-N)
    FF[f, FF_HIGH] = max(FF[f, FF_HIGH], off + size)
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
    PI[p, PI_OFF] = int(off)
    PI[p, PI_EPOCH] = FI[f, FI_EPOCH]
    PI[p, PI_TRIM] = 0
    PI[p, PI_CTRL] = 0
    PI[p, PI_CLASS] = FI[f, FI_CLASS]
    PI[p, PI_VC] = PI[p, PI_INVC] = 0  # a NIC port is no torus link
    PI[p, PI_SNO] = meta[M_SENT_PKTS]  # selective repeat: a loss is NACKed when a later-sent packet arrives
    PI[p, PI_ENT] = -1
    if P[P_ENTROPIES] > 0:  # the sender cycles through its entropy values, one per packet
        PI[p, PI_ENT] = FI[f, FI_ENT_NEXT] % int(P[P_ENTROPIES])
        FI[f, FI_ENT_NEXT] += 1
    if P[P_CC] == _CC_NSCC:
        PF[p, PF_SENT_T] = t  # NSCC's RTT sample
    FF[f, FF_INFLIGHT] += size
    FF[f, FF_LAST_TX] = t
    FF[f, FF_LAST_SIZE] = size + P[P_HEADER] + P[P_GAP]  # the NIC paces its wire bytes
    if P[P_CC] == _CC_DCQCN:
        dcqcn_sent(FF, FI, P, f, size)
    LI[lk, LI_CREDITS] -= 1
    meta[M_SENT_PKTS] += 1
    _start_tx(LI, LF, PI, PF, P, lk, p, t, H)


@njit(cache=True, inline="always")
def _entropy_hash(salt, ent):
    """A seeded hash of (flow, switch) ``salt`` and entropy ``ent`` (31-bit LCG mixing, no overflow)."""
    x = (salt ^ (ent * 2654435761)) & 0x7FFFFFFF
    x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x ^ (x >> 16)


@njit(cache=True)
def out_link_index(LI, flow_ptr, flow_links):
    """Each flow's links grouped by the node they leave, for :func:`_next_link`: ``order`` lists the
    positions of ``flow_links`` sorted by (flow, source node), keeping the route's order within a
    node (a stable sort), and ``order_src[s]`` is the source node of ``flow_links[order[s]]``.
    A flow's out-links at a node are then one run of ``order``, found by binary search, instead of
    two scans of all the flow's links (146 at k=16: 64 core links each way) per switch hop."""
    n = flow_links.size
    nodes = 0
    for i in range(n):
        nodes = max(nodes, LI[flow_links[i], LI_SRC] + 1)
    key = np.empty(n, dtype=np.int64)
    for f in range(flow_ptr.size - 1):
        for i in range(flow_ptr[f], flow_ptr[f + 1]):
            key[i] = f * nodes + LI[flow_links[i], LI_SRC]
    order = np.argsort(key, kind="mergesort")  # stable: the route's order within a node is kept
    order_src = np.empty(n, dtype=np.int64)
    for s in range(n):
        order_src[s] = LI[flow_links[order[s]], LI_SRC]
    return order, order_src


@njit(cache=True)  # not inlined: its five call sites (with the trimming paths) would grow the compile
def _next_link(LI, route, f, node, ent):
    """The flow's out-link at ``node``: its only one, or, when sprayed, one of the flow's equal-cost
    out-links there: by a hash of the packet's entropy ``ent`` (``entropies`` > 0, an ECMP hash of
    the entropy value as UET's packet spraying uses), else the next in round-robin order. One
    counter per flow and switch, kept in ``route[2]`` at the flow's first out-link of that switch
    (in the route's order), starts at a seeded offset (the hash's salt with entropies). ``route[3]``
    and ``route[4]`` are :func:`out_link_index`'s ``order`` and ``order_src``."""
    flow_ptr, flow_links, spray_rr, order, order_src = route
    lo, hi = flow_ptr[f], flow_ptr[f + 1]
    while lo < hi:  # the first position of node's run in the flow's sorted block
        mid = (lo + hi) >> 1
        if order_src[mid] < node:
            lo = mid + 1
        else:
            hi = mid
    end = flow_ptr[f + 1]
    count = 0
    while lo + count < end and order_src[lo + count] == node:
        count += 1
    if count == 0:
        return -1
    first = order[lo]  # the smallest route position among them (stable order)
    if count == 1:
        return flow_links[first]
    if ent >= 0:
        pick = _entropy_hash(spray_rr[first], ent) % count
    else:
        pick = spray_rr[first] % count
        spray_rr[first] += 1
    return flow_links[order[lo + pick]]
