"""The packet kernel's state outside the tables (layer L3): the packet pool and its free list,
the ``meta`` counters, the flows' start events and the time-series sampling. Used by
:func:`fabricsim.network.packet.loop.run`."""

from __future__ import annotations

import numpy as np

from fabricsim.network.packet import heap
from fabricsim.network.packet.jit import njit
from fabricsim.network.packet.kernel import (
    M_SAMPLES,
    META_COLS,
    _key,
)
from fabricsim.network.packet.layout import (
    EV_SAMPLE,
    EV_START,
    FF_DELIVERED,
    FF_FINISH,
    FF_RC,
    FF_SIZE,
    FF_START,
    FI_DONE,
    LF_QBYTES,
    P_SAMPLE_DT,
    PF_COLS,
    PI_COLS,
    PI_NEXT,
)


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
    _LI, LF, _FI, FF, _PI, _PF, P, _hosts, _uplink, _wake_t, H, meta, _LINT, _rcvd = S
    delivered, rate, queue = series
    k = meta[M_SAMPLES]
    if k >= delivered.shape[0]:
        return
    for f in range(FF.shape[0]):  # element loops: the event loop that calls this runs without NRT
        delivered[k, f] = FF[f, FF_DELIVERED]
        rate[k, f] = FF[f, FF_RC]
    for lk in range(LF.shape[0]):
        queue[k, lk] = LF[lk, LF_QBYTES]
    meta[M_SAMPLES] = k + 1
    heap.push(H[0], H[1], H[2], H[3], t + P[P_SAMPLE_DT], _key(EV_SAMPLE, 0))


@njit(cache=True)
def _new_pool(size):
    """An empty packet pool of ``size`` rows (all on the free list) and the kernel's ``meta``
    counters: heap size, heap sequence, free-list head, free count, sent packets, samples."""
    PI = np.zeros((size, PI_COLS), dtype=np.int64)
    PF = np.zeros((size, PF_COLS), dtype=np.float64)
    for p in range(size):
        PI[p, PI_NEXT] = p + 1 if p + 1 < size else -1
    meta = np.zeros(META_COLS, dtype=np.int64)
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
