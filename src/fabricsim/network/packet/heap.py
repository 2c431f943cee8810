"""The packet kernel's event queue: a binary min-heap of (time, seq) in flat numpy arrays (layer L3).

``H_T`` holds times, ``H_K`` event keys (kind in the low bits, argument above), ``H_S`` the push
sequence number that breaks ties first-in first-out, so equal-time events run in the order they
were scheduled and every run is deterministic. ``meta[0]`` is the heap size, ``meta[1]`` the next
sequence number. Push and pop are O(log n); :func:`grown` doubles the arrays when they fill.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _less(ht, hs, i, j):
    return ht[i] < ht[j] or (ht[i] == ht[j] and hs[i] < hs[j])


@njit(cache=True)
def _swap(ht, hk, hs, i, j):
    ht[i], ht[j] = ht[j], ht[i]
    hk[i], hk[j] = hk[j], hk[i]
    hs[i], hs[j] = hs[j], hs[i]


@njit(cache=True)
def push(ht, hk, hs, meta, t, key):
    """Schedule event ``key`` at time ``t`` (the caller keeps ``meta[0] < ht.size``)."""
    i = meta[0]
    meta[0] += 1
    ht[i] = t
    hk[i] = key
    hs[i] = meta[1]
    meta[1] += 1
    while i > 0:
        parent = (i - 1) >> 1
        if not _less(ht, hs, i, parent):
            break
        _swap(ht, hk, hs, i, parent)
        i = parent


@njit(cache=True)
def pop(ht, hk, hs, meta):
    """Remove and return the earliest (time, key)."""
    t, key = ht[0], hk[0]
    n = meta[0] - 1
    meta[0] = n
    ht[0], hk[0], hs[0] = ht[n], hk[n], hs[n]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        child = left
        if left + 1 < n and _less(ht, hs, left + 1, left):
            child = left + 1
        if not _less(ht, hs, child, i):
            break
        _swap(ht, hk, hs, i, child)
        i = child
    return t, key


@njit(cache=True)
def grown(ht, hk, hs):
    """The heap arrays copied into arrays twice as long."""
    n = ht.size
    t2 = np.empty(2 * n, dtype=ht.dtype)
    k2 = np.empty(2 * n, dtype=hk.dtype)
    s2 = np.empty(2 * n, dtype=hs.dtype)
    t2[:n] = ht
    k2[:n] = hk
    s2[:n] = hs
    return t2, k2, s2
