"""Loss recovery of the packet kernel: go-back-N, selective repeat and trimmed packets (layer L3).

* Go-back-N (``loss_recovery`` 0, the RoCE NIC default: NVIDIA "RoCE" / ConnectX RC transport
  retransmits from the first lost PSN; Mittal et al., "Revisiting Network Support for RDMA" (IRN),
  SIGCOMM'18, section 2: RoCE NICs use go-back-N, PFC is there to avoid its loss cost). The receiver
  accepts a flow's bytes only up to its lowest missing packet (the *gap*); a later packet is
  discarded and the first one NACKs the gap (the NACK, a control packet, returns over the reverse path).
  The sender then rewinds to the receiver's cumulative acknowledgement (its first missing byte) and
  sends every byte from there again, including those still in flight behind the lost one. If no
  later packet arrives, the timeout (``rto_s``) of the lost packet does the same. A NACK or timeout
  of a packet sent before the sender's last rewind (an older *epoch*) is ignored: that rewind went
  back to a first missing byte at or below it, so its resend is under way.
* Selective repeat (``loss_recovery`` 1; IRN, Mittal et al., SIGCOMM'18, section 3.1, as ConnectX's
  selective repeat and UET's PDS do): the receiver places every packet where it belongs; when a
  packet arrives that was sent after a lost one, the receiver NACKs the loss (IRN's NACK with its
  selective acknowledgement: one NACK names every packet of the flow lost before the arriving one
  and not named yet) and the sender resends exactly those packets, ahead of new data. A lost packet
  that no later packet follows (e.g. a flow's last) is resent by its timeout (``rto_s``, IRN's
  fallback); a NACKed packet's timeout is off (NACKs are never lost, below).
* Trimming (``trimming`` 1; NDP, Handley et al., SIGCOMM'17, section 3; UEC 1.0 specification,
  packet trimming): a switch whose buffer cannot take a packet cuts it to its headers
  (``trim_bytes``) and forwards the header in a strict-priority class that is never dropped; the
  receiver NACKs it and the sender resends exactly that packet (with either loss recovery).

Simplifications, stated: the receiver's loss detection is exact (reordering by spraying alone never
looks like a loss: the NIC places out-of-order data directly, as ConnectX with adaptive routing
does; a selective NACK names only packets actually lost, ordered by send serial ``PI_SNO``, which a
resend renews as UET gives a retransmission a new PSN); NACKs and trim NACKs are control packets
that cross the queues back to the sender (see :mod:`kernel`) but are never lost themselves; every
packet of a flow except its last is one MTU, so its offset / MTU numbers its slot in the receive map
``rcvd`` (a resent byte is counted once).

Selective repeat's lost packets: a dropped packet waits, whole, on its flow's *lost list*
(``FI_LOST_HEAD``, linked through ``PI_NEXT``) with its timeout in ``PF_RTO_T``. A NACK moves it
to a chain the NACK carries and sets ``PF_RTO_T`` to -1; at the sender the packet itself goes on
the retransmission list and is reused once resent. Its timeout event, still in the heap, finds
``PF_RTO_T`` no longer equal to its own time and does nothing (the row may hold another packet by
then).
"""

from __future__ import annotations

import numpy as np

from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.kernel import _GO_BACK_N, M_TRIMMED, append_packet
from fabricsim.network.packet.layout import (
    FF_GAP,
    FF_INFLIGHT,
    FF_NACK_OFF,
    FF_RETX,
    FF_SENT,
    FI_CUM,
    FI_EPOCH,
    FI_GAP_EPOCH,
    FI_LOST_HEAD,
    FI_LOST_TAIL,
    FI_NACK_EPOCH,
    FI_NACKED,
    FI_RQ_HEAD,
    FI_RQ_TAIL,
    FI_SLOT0,
    FI_SLOTS,
    P_LOSS_RECOVERY,
    P_MTU,
    P_TRIM_BYTES,
    PF_RTO_T,
    PI_EPOCH,
    PI_FLOW,
    PI_NEXT,
    PI_OFF,
    PI_SIZE,
    PI_SNO,
    PI_TRIM,
)
from fabricsim.network.packet.reaction import release


@njit(cache=True, inline="always")
def _slot(FI, PI, P, p):
    """Packet ``p``'s entry in the receive map, -1 for a flow without one (infinite size)."""
    f = PI[p, PI_FLOW]
    k = int(PI[p, PI_OFF] // P[P_MTU])
    if k >= FI[f, FI_SLOTS]:
        return -1
    return FI[f, FI_SLOT0] + k


@njit(cache=True, inline="always")
def receive(FI, FF, PI, P, rcvd, p):
    """The receiver takes packet ``p``: 1 if it brings new bytes, 0 for a duplicate, -1 if go-back-N
    discards it (it lies beyond the flow's gap)."""
    f = PI[p, PI_FLOW]
    off = PI[p, PI_OFF]
    if P[P_LOSS_RECOVERY] == _GO_BACK_N and FF[f, FF_GAP] < off:
        return -1
    if FF[f, FF_GAP] == off:  # the gap is filled
        FF[f, FF_GAP] = np.inf
        FI[f, FI_NACKED] = 0
    k = _slot(FI, PI, P, p)
    if k < 0:
        return 1
    if rcvd[k]:
        return 0
    rcvd[k] = 1
    return 1


@njit(cache=True)
def _first_missing(FI, P, rcvd, f, off):
    """The flow's first byte not yet received (``off`` for a flow without a receive map). The
    cumulative point only moves forward, so it is advanced here, when a loss needs it, not on every
    delivery."""
    if FI[f, FI_SLOTS] == 0:
        return off
    while FI[f, FI_CUM] < FI[f, FI_SLOTS] and rcvd[FI[f, FI_SLOT0] + FI[f, FI_CUM]]:
        FI[f, FI_CUM] += 1
    return FI[f, FI_CUM] * P[P_MTU]


@njit(cache=True, inline="always")
def nack_due(FI, FF, PI, P, rcvd, p):
    """True once per gap: the arrival of packet ``p`` beyond the gap makes the receiver NACK it (the
    NACK carries the first missing byte and ``p``'s send epoch)."""
    f = PI[p, PI_FLOW]
    if FI[f, FI_NACKED]:
        return False
    FI[f, FI_NACKED] = 1
    FF[f, FF_NACK_OFF] = _first_missing(FI, P, rcvd, f, FF[f, FF_GAP])
    FI[f, FI_NACK_EPOCH] = PI[p, PI_EPOCH]
    return True


@njit(cache=True, inline="always")
def note_loss(FI, FF, PI, PF, P, rcvd, p, deadline):
    """Packet ``p`` is lost; its timeout falls due at ``deadline``. Selective repeat: ``p`` joins its
    flow's lost list. Go-back-N: the receiver's gap moves down to it (a lost resend of the gap renews
    the gap's epoch, so it is NACKed again; a copy of bytes already received makes no gap)."""
    f = PI[p, PI_FLOW]
    if P[P_LOSS_RECOVERY] != _GO_BACK_N:
        PF[p, PF_RTO_T] = deadline
        append_packet(PI, FI, f, FI_LOST_HEAD, FI_LOST_TAIL, p)
        return
    k = _slot(FI, PI, P, p)
    if k >= 0 and rcvd[k]:
        return
    off = PI[p, PI_OFF]
    epoch = PI[p, PI_EPOCH]
    if off < FF[f, FF_GAP] or (off == FF[f, FF_GAP] and epoch > FI[f, FI_GAP_EPOCH]):
        FF[f, FF_GAP] = off
        FI[f, FI_GAP_EPOCH] = epoch
        FI[f, FI_NACKED] = 0


@njit(cache=True)
def lost_before(FI, PI, PF, f, sno):
    """Selective repeat, at flow ``f``'s receiver on the arrival of a packet of send serial ``sno``:
    take every packet of the lost list sent before it (in the list's order) into a chain for one
    NACK, their timeouts off; the chain's first packet, -1 if none."""
    head, tail, prev = -1, -1, -1
    p = FI[f, FI_LOST_HEAD]
    while p >= 0:
        nxt = PI[p, PI_NEXT]
        if PI[p, PI_SNO] < sno:
            _unlink_after(FI, PI, f, prev, p)
            if tail >= 0:
                PI[tail, PI_NEXT] = p
            else:
                head = p
            tail = p
            PF[p, PF_RTO_T] = -1.0
        else:
            prev = p
        p = nxt
    return head


@njit(cache=True)
def _unlink_lost(FI, PI, f, p):
    """Take packet ``p`` off flow ``f``'s lost list (its timeout resends it)."""
    prev = -1
    q = FI[f, FI_LOST_HEAD]
    while q >= 0 and q != p:
        prev = q
        q = PI[q, PI_NEXT]
    if q >= 0:
        _unlink_after(FI, PI, f, prev, p)


@njit(cache=True, inline="always")
def _unlink_after(FI, PI, f, prev, p):
    """Take packet ``p`` off flow ``f``'s lost list, ``prev`` the packet before it (-1: ``p`` is
    the head)."""
    nxt = PI[p, PI_NEXT]
    if prev >= 0:
        PI[prev, PI_NEXT] = nxt
    else:
        FI[f, FI_LOST_HEAD] = nxt
    if FI[f, FI_LOST_TAIL] == p:
        FI[f, FI_LOST_TAIL] = prev
    PI[p, PI_NEXT] = -1


@njit(cache=True, inline="always")
def _rewind(FI, FF, f, off):
    """Go-back-N: send again from byte ``off``; 1 if that moved the sender back. The window starts
    empty: what was in flight will be sent again (its ACKs, if any, no longer count)."""
    if off >= FF[f, FF_SENT]:
        return 0
    FF[f, FF_SENT] = off
    FF[f, FF_INFLIGHT] = 0.0
    FI[f, FI_EPOCH] += 1
    return 1


@njit(cache=True, inline="always")
def _queue_resend(FI, FF, PI, p):
    """Put packet ``p`` (whole) on its flow's retransmission list."""
    f = PI[p, PI_FLOW]
    append_packet(PI, FI, f, FI_RQ_HEAD, FI_RQ_TAIL, p)
    FF[f, FF_RETX] += PI[p, PI_SIZE]


@njit(cache=True)
def on_timeout(FI, FF, PI, PF, P, rcvd, p, t):
    """The retransmission timeout of lost (or discarded) packet ``p`` at its sender, due at ``t``.
    Returns (resend, keep): resend 1 if the flow has bytes to send again; keep 1 if ``p`` is not the
    caller's to free: it waits on the retransmission list (selective repeat), or the timeout is void
    (selective repeat: a NACK resent it, the row may be another packet now; then resend is 0)."""
    f = PI[p, PI_FLOW]
    if P[P_LOSS_RECOVERY] != _GO_BACK_N:
        if PF[p, PF_RTO_T] != t:
            return 0, 1
        _unlink_lost(FI, PI, f, p)
    release(FI, FF, PI, p)
    k = _slot(FI, PI, P, p)
    if k >= 0 and rcvd[k]:
        return 0, 0  # received meanwhile (a go-back-N resend)
    if P[P_LOSS_RECOVERY] != _GO_BACK_N:
        _queue_resend(FI, FF, PI, p)
        return 1, 1
    if PI[p, PI_EPOCH] != FI[f, FI_EPOCH]:
        return 0, 0  # the sender went back since p left: its resend is under way
    return _rewind(FI, FF, f, _first_missing(FI, P, rcvd, f, PI[p, PI_OFF])), 0


@njit(cache=True)
def on_nack(FI, FF, f):
    """A go-back-N NACK reaches flow ``f``'s sender: rewind to the gap unless it is stale."""
    if FI[f, FI_NACK_EPOCH] != FI[f, FI_EPOCH]:
        return 0
    return _rewind(FI, FF, f, FF[f, FF_NACK_OFF])


@njit(cache=True)
def on_selective_nack(FI, FF, PI, p):
    """A selective-repeat NACK reaches the sender: resend exactly the lost packets of its chain
    (from packet ``p``, linked through ``PI_NEXT``), in order. Returns their flow."""
    f = PI[p, PI_FLOW]
    while p >= 0:
        nxt = PI[p, PI_NEXT]
        release(FI, FF, PI, p)
        _queue_resend(FI, FF, PI, p)
        p = nxt
    return f


@njit(cache=True, inline="always")
def trim(PI, P, meta, p):
    """A full switch cuts packet ``p`` to its headers (the payload size is kept to resend it)."""
    PI[p, PI_TRIM] = PI[p, PI_SIZE]
    PI[p, PI_SIZE] = min(PI[p, PI_SIZE], int(P[P_TRIM_BYTES]))
    meta[M_TRIMMED] += 1


@njit(cache=True)
def on_trim_nack(FI, FF, PI, p):
    """The NACK of trimmed packet ``p`` reaches its sender: resend exactly that packet."""
    PI[p, PI_SIZE] = PI[p, PI_TRIM]
    PI[p, PI_TRIM] = 0
    release(FI, FF, PI, p)
    _queue_resend(FI, FF, PI, p)
