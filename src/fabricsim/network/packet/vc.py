"""The virtual channels of a torus under link credits (layer L3): each router link's dimension and
whether it is its dimension's dateline (the kernel docstring says what the kernel does with them).

A torus's rings make credit-controlled buffers depend on each other in a cycle, which can deadlock;
two virtual channels with a dateline per dimension break every ring's cycle (Dally & Seitz, IEEE
Trans. Computers 1987; Dally & Towles, "Principles and Practices of Interconnection Networks", ch.
14). The dateline of a ring is its wraparound link (from the last position to the first, or back).

The routers' coordinates come from the topology's name and its builder's numbering: the chips are
nodes 0..n-1 and their routers n..2n-1 in the same order, x fastest for ``ocs-torus-AxBxC[-twisted]``
(:func:`fabricsim.topology.ocs.slice_pairs`), the last dimension fastest for ``torus-AxB[xC]``
(:func:`fabricsim.topology.builders.torus`, a C-order grid). A system's torus domains
(:func:`fabricsim.topology.system._torus_domains`: TPU ICI, Trainium NeuronLink) carry their shape
in the topology's meta (``torus_dim0``, ``torus_dim1``, ...; x fastest, as
:func:`fabricsim.topology.system.torus_pairs` cables them): GPU g's router is node ``hosts + g``,
and domain after domain holds ``prod(dims)`` of them. Any other topology has no torus link.
"""

from __future__ import annotations

import re

import numpy as np

from fabricsim.topology.graph import Topology

_TORUS_NAME = re.compile(r"(ocs-)?torus-(\d+(?:x\d+)*)(-twisted)?")


def torus_channels(topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """Per link: its torus dimension (-1: not a link between two routers of a torus) and 1 if it is
    that dimension's dateline (a wraparound link of a ring of 3 or more routers), else 0."""
    dim = np.full(topo.links, -1, dtype=np.int64)
    dateline = np.zeros(topo.links, dtype=np.int64)
    match = _TORUS_NAME.fullmatch(topo.name)
    if match is not None:
        dims = tuple(int(d) for d in match.group(2).split("x"))
        if topo.nodes != 2 * int(np.prod(dims)):
            return dim, dateline
        order = "F" if match.group(1) else "C"  # ocs-torus: x fastest; the builder's grid: C order
        return _channels(topo, dims, int(np.prod(dims)), order)
    if "torus_dim0" in topo.meta:  # a system's torus domains (module docstring)
        dims = tuple(int(topo.meta[f"torus_dim{d}"]) for d in range(len(topo.meta)) if f"torus_dim{d}" in topo.meta)
        return _channels(topo, dims, topo.hosts, "F")
    return dim, dateline


def _channels(topo: Topology, dims: tuple[int, ...], count: int, order: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`torus_channels` of tori of shape ``dims`` whose routers are nodes ``count`` to
    ``2 count - 1``, a domain of ``prod(dims)`` after another, positions numbered in ``order``."""
    dim = np.full(topo.links, -1, dtype=np.int64)
    dateline = np.zeros(topo.links, dtype=np.int64)
    src, dst = topo.link_src.astype(np.int64) - count, topo.link_dst.astype(np.int64) - count
    size_all = int(np.prod(dims))
    routers = (src >= 0) & (dst >= 0) & (src < count) & (dst < count) & (src // size_all == dst // size_all)
    a = np.stack(np.unravel_index(src[routers] % size_all, dims, order=order))
    b = np.stack(np.unravel_index(dst[routers] % size_all, dims, order=order))
    size = np.asarray(dims)[:, None]
    step = (b - a) % size
    along = (step == 1) | (step == size - 1)  # a twisted wraparound also shifts the long dimensions by half
    first = np.argmax(along, axis=0)
    ok = along.any(axis=0)
    cols = np.arange(first.size)
    wrap = np.abs(b - a)[first, cols] == size[first, 0] - 1
    dim[np.flatnonzero(routers)[ok]] = first[ok]
    dateline[np.flatnonzero(routers)[ok & wrap & (size[first, 0] > 2)]] = 1
    return dim, dateline
