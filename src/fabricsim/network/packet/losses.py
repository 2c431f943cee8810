"""What the network does not deliver whole, and what the sender does about it (layer L3): a full
switch trims or drops a packet, a bit error corrupts one, and the sender's timeouts, NACKs and trim
NACKs (:mod:`fabricsim.network.packet.recovery`) put its bytes back on the wire. Compiled inline
into :mod:`fabricsim.network.packet.loop`'s per-packet path where marked so."""

from __future__ import annotations

import math

import numpy as np

from fabricsim.network.packet import heap
from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.kernel import (
    _CC_NSCC,
    _GO_BACK_N,
    S_CLASS_DROPS,
    S_DROPS,
    _frame,
    _free,
    _key,
    _next_link,
    _nic_kick,
    _try_switch_tx,
    append_packet,
)
from fabricsim.network.packet.layout import (
    EV_NACK,
    EV_RETX,
    FF_WIN,
    FI_ACTIVE,
    FI_SRC,
    LF_CQBYTES,
    LF_CSTRIDE,
    LF_QBYTES,
    LI_CSTRIDE,
    LI_QHEAD,
    LI_QTAIL,
    P_CC,
    P_LOSS_RECOVERY,
    P_RTO,
    P_TRIM,
    PI_CLASS,
    PI_ENT,
    PI_FLOW,
    PI_INLINK,
    PI_LINK,
    PI_NEXT,
    PI_SIZE,
)
from fabricsim.network.packet.reaction import nscc_bound
from fabricsim.network.packet.recovery import (
    note_loss,
    on_nack,
    on_selective_nack,
    on_timeout,
    on_trim_nack,
    trim,
)


@njit(cache=True)
def _activate(FI, hosts, f):
    """Put flow ``f`` on its sender's list of flows with something to send (if it is not there)."""
    act_ptr, act_n, act = hosts[0], hosts[1], hosts[2]
    if FI[f, FI_ACTIVE]:
        return
    h = FI[f, FI_SRC]
    act[act_ptr[h] + act_n[h]] = f
    act_n[h] += 1
    FI[f, FI_ACTIVE] = 1


@njit(cache=True, inline="always")
def _enqueue(LI, LF, PI, P, nl, p, front):
    """Append packet ``p`` to egress ``nl``'s FIFO of its traffic class, or put it first (``front``:
    a trimmed header's strict priority within its class)."""
    PI[p, PI_LINK] = nl
    c = PI[p, PI_CLASS]
    head = LI[nl, LI_QHEAD + c * LI_CSTRIDE]
    if front and head >= 0:
        PI[p, PI_NEXT] = head
        LI[nl, LI_QHEAD + c * LI_CSTRIDE] = p
    else:
        append_packet(PI, LI, nl, LI_QHEAD + c * LI_CSTRIDE, LI_QTAIL + c * LI_CSTRIDE, p)
    size = _frame(P, PI, p)
    LF[nl, LF_QBYTES] += size
    LF[nl, LF_CQBYTES + c * LF_CSTRIDE] += size


@njit(cache=True, inline="always")
def _forward_header(S, route, p, lk, node, t):
    """A trimmed header crosses switch ``node`` ahead of the queued packets, holding no buffer."""
    LI, LF, _FI, _FF, PI, PF, P, _hosts, _uplink, _wake_t, H, _meta, _LINT, _rcvd = S
    nl = _next_link(LI, route, PI[p, PI_FLOW], node, PI[p, PI_ENT])
    if nl < 0:
        raise RuntimeError("packet kernel: a packet reached a switch off its flow's route")
    PI[p, PI_INLINK] = lk
    _enqueue(LI, LF, PI, P, nl, p, True)
    _try_switch_tx(LI, LF, PI, PF, P, nl, t, H)


@njit(cache=True, inline="always")
def _overflow(S, stats, route, p, lk, node, t):
    """Switch ``node`` has no room for packet ``p``: trim it (``trimming``) or drop it."""
    if S[6][P_TRIM] > 0.0:
        trim(S[4], S[6], S[11], p)
        _forward_header(S, route, p, lk, node, t)
    else:
        _drop(S, stats, p, t)


@njit(cache=True, inline="always")
def _corrupted(ber, size):
    """A bit error the FEC left in a frame of ``size`` bytes on a link of post-FEC bit-error rate
    ``ber``: probability 1 - (1 - BER)^bits (seeded)."""
    return np.random.random() < -math.expm1(8.0 * size * math.log1p(-ber))


@njit(cache=True)
def _drop(S, stats, p, t):
    """Drop ``p``; its sender learns of the loss one retransmission timeout later, or by the
    receiver's NACK when a later packet arrives first."""
    H = S[10]
    stats[S_DROPS] += 1
    stats[S_CLASS_DROPS + S[4][p, PI_CLASS]] += 1
    deadline = t + S[6][P_RTO]
    note_loss(S[2], S[3], S[4], S[5], S[6], S[13], p, deadline)
    heap.push(H[0], H[1], H[2], H[3], deadline, _key(EV_RETX, p))


@njit(cache=True)
def _recover(S, kind, arg, t):
    """Loss recovery at the sender (:mod:`recovery`): a timeout, a NACK (go-back-N's or selective
    repeat's), a trim NACK."""
    LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, H, meta, _LINT, rcvd = S
    if kind == EV_RETX:
        f = PI[arg, PI_FLOW]
        again, keep = on_timeout(FI, FF, PI, PF, P, rcvd, arg, t)
        if not keep:
            _free(PI, meta, arg)
        # the packet left the window (HPCC's in-flight bytes): the sender may send again, unless
        # the timeout was void (selective repeat: its NACK came first)
        resend = 1 if again > 0 or keep == 0 else 0
    elif kind == EV_NACK and P[P_LOSS_RECOVERY] != _GO_BACK_N:
        f = on_selective_nack(FI, FF, PI, arg)
        resend = 1
    elif kind == EV_NACK:
        f = arg
        resend = on_nack(FI, FF, f)
    else:  # EV_TRIM_NACK
        f = PI[arg, PI_FLOW]
        on_trim_nack(FI, FF, PI, arg)
        if P[P_CC] == _CC_NSCC:  # a trimmed packet is a congestion signal: its size off the window
            nscc_bound(FF, P, f, FF[f, FF_WIN] - PI[arg, PI_SIZE])
        resend = 1
    if resend:
        _activate(FI, hosts, f)
        _nic_kick(LI, LF, FI, FF, PI, PF, P, hosts, uplink, wake_t, FI[f, FI_SRC], t, H, meta)
