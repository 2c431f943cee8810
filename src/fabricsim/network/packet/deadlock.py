"""Diagnosis of a packet run that stopped with flows undelivered (layer L3): a PFC deadlock.

PFC pauses a link's upstream end when the downstream switch holds too many bytes that entered over
it; those bytes wait in the switch's egress queues. If an egress is itself paused, the ingress it
holds cannot drain, and the pause spreads upstream. When these waits close a cycle (a cyclic buffer
dependency: every link of the cycle paused, holding packets queued on the next one, itself paused)
no packet of the cycle can ever move and the run stops with nothing left to happen: a true PFC
deadlock, documented on Clos fabrics with routing loops or up-down violations and on rings and tori
(Hu et al., "Deadlocks in Datacenter Networks: Why Do They Form, and How to Avoid Them", HotNets
2016; Shpiner et al., "Unlocking Credit Loop Deadlock", HotNets 2016). A torus under link credits
avoids it with dateline virtual channels (:mod:`vc`); PFC here has none.

:func:`pause_cycle` finds such a cycle in the kernel's final state. The wait graph has an edge from
link I to link A when, for one traffic class, I's upstream end is paused, I's ingress still holds
bytes at its downstream node, A leaves that node, A's queue of the class is not empty, A is paused,
and some flow's route takes I then A (the packets held on I's ingress can be queued on A).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from fabricsim.network.packet import layout as L  # noqa: N812 (the column-name table)


def pause_cycle(LI: np.ndarray, LF: np.ndarray, routes, classes: int) -> np.ndarray:
    """Link ids of a cycle of the pause wait graph (module docstring) in the order each waits for
    the next: the shortest through the lowest-id link on any cycle; empty if the graph has none.
    ``routes`` is the run's link x flow incidence (scipy sparse)."""
    links = LI.shape[0]
    src, dst = LI[:, L.LI_SRC], LI[:, L.LI_DST]
    heads, tails = [], []
    for c in range(classes):
        paused = LI[:, L.LI_PAUSED + c * L.LI_CSTRIDE] > 0
        holds = paused & (LF[:, L.LF_ING + c * L.LF_CSTRIDE] > 0.0)  # I: paused, bytes in its ingress
        stuck = paused & (LI[:, L.LI_QHEAD + c * L.LI_CSTRIDE] >= 0)  # A: paused, its queue not empty
        cand = np.flatnonzero(holds | stuck)
        if cand.size == 0:
            continue
        sub = csr_matrix(routes)[cand]
        share = (sub @ sub.T).tocoo()  # pairs of candidate links on one flow's route
        i, a = cand[share.row], cand[share.col]
        keep = holds[i] & stuck[a] & (dst[i] == src[a])
        heads.append(i[keep])
        tails.append(a[keep])
    if not heads:
        return np.empty(0, dtype=np.int64)
    i, a = np.concatenate(heads), np.concatenate(tails)
    graph = csr_matrix((np.ones(i.size), (i, a)), shape=(links, links))
    graph.sum_duplicates()
    count, label = connected_components(graph, directed=True, connection="strong")
    sizes = np.bincount(label, minlength=count)
    cyclic = np.flatnonzero(sizes[label] > 1)  # links in a strongly connected component of 2 or more
    if cyclic.size == 0:
        return np.empty(0, dtype=np.int64)
    return _shortest_cycle(graph, label, int(cyclic[0]))


def _shortest_cycle(graph: csr_matrix, label: np.ndarray, start: int) -> np.ndarray:
    """The shortest cycle through ``start`` (in a strongly connected component of 2 or more links):
    a breadth-first search from it, successors in id order, back to it."""
    parent = {start: -1}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for succ in graph.indices[graph.indptr[node] : graph.indptr[node + 1]]:
                succ = int(succ)
                if succ == start:
                    path = [node]
                    while parent[path[-1]] >= 0:
                        path.append(parent[path[-1]])
                    return np.asarray(path[::-1], dtype=np.int64)
                if succ not in parent and label[succ] == label[start]:
                    parent[succ] = node
                    nxt.append(succ)
        frontier = nxt
    raise AssertionError("a link of a strongly connected component lies on a cycle")  # unreachable
