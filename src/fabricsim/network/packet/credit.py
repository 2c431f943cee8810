"""Receiver credits of the packet kernel, in the spirit of Ultra Ethernet's RCCC (layer L3).

UEC 1.0's receiver-credit congestion control (RCCC) lets a receiver hand out credit, the bytes each
sender may send to it, so that an incast never offers the last hop more than it drains (UEC 1.0
specification, congestion management, RCCC [section number unverified here]; EQDS, Olteanu et al.,
NSDI'22, the receiver-driven design it follows). Simplified here (``rccc`` 1): a flow starts with one
BDP of credit (line rate x base RTT: its first round trip is sent unscheduled); each receiver host
runs a pacer that grants one MTU of credit every full frame's wire time ((MTU + headers + gap) / line
rate: what its last hop drains) to the next of its unfinished flows that still need credit (round
robin), and the credit reaches the sender one path latency later. A sender sends while its credit is
positive. Not modelled: credit requests, the credit target and its coupling with NSCC, priorities
between senders; grants are not packets in the queues (unlike ACKs, NACKs and CNPs).
"""

from __future__ import annotations

from fabricsim.network.packet import heap
from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.kernel import _key
from fabricsim.network.packet.layout import (
    EV_GRANT,
    EV_PULL,
    FF_CREDIT,
    FF_CREDIT_FLY,
    FF_RET_LAT,
    FF_RETX,
    FF_SENT,
    FF_SIZE,
    FF_START,
    FI_DONE,
    P_GAP,
    P_HEADER,
    P_LINE,
    P_MTU,
)


@njit(cache=True, inline="always")
def _needs(FF, f):
    """Bytes flow ``f`` still has to send beyond the credit it holds or has coming."""
    return FF[f, FF_SIZE] - FF[f, FF_SENT] + FF[f, FF_RETX] - FF[f, FF_CREDIT] - FF[f, FF_CREDIT_FLY]


@njit(cache=True)
def pull(FI, FF, P, rx, H, h, t):
    """Receiver host ``h``'s pacer at ``t``: grant an MTU to its next flow that needs credit; tick
    again one MTU time later while any of its flows is unfinished (else stop until a flow starts)."""
    rx_ptr, rx_flows, rx_rr, rx_on = rx
    n = rx_ptr[h + 1] - rx_ptr[h]
    unfinished = False
    for i in range(n):
        slot = (rx_rr[h] + i) % n
        f = rx_flows[rx_ptr[h] + slot]
        if FI[f, FI_DONE] or FF[f, FF_START] > t:
            continue  # finished, or not started yet (its start runs the pacer again)
        unfinished = True
        if _needs(FF, f) > 0.0:
            FF[f, FF_CREDIT_FLY] += P[P_MTU]
            heap.push(H[0], H[1], H[2], H[3], t + FF[f, FF_RET_LAT], _key(EV_GRANT, f))
            rx_rr[h] = (slot + 1) % n
            break
    rx_on[h] = 1 if unfinished else 0
    if unfinished:
        heap.push(H[0], H[1], H[2], H[3], t + (P[P_MTU] + P[P_HEADER] + P[P_GAP]) / P[P_LINE], _key(EV_PULL, h))


@njit(cache=True)
def start_pacer(rx, H, h, t):
    """A flow to host ``h`` started: run its receiver's pacer if it is idle."""
    rx_on = rx[3]
    if not rx_on[h]:
        rx_on[h] = 1
        heap.push(H[0], H[1], H[2], H[3], t, _key(EV_PULL, h))


@njit(cache=True)
def granted(FF, P, f):
    """One MTU of credit reaches flow ``f``'s sender."""
    FF[f, FF_CREDIT_FLY] -= P[P_MTU]
    FF[f, FF_CREDIT] += P[P_MTU]
