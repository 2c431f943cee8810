"""A TPU slice's torus built by optical circuit switches (layer L2): ``ocs-torus:4x4x8,twisted=1``.

A TPU v4/v5p pod is a set of 4x4x4 cubes of 64 chips; inside a cube the chips are cabled
electrically, and every link that leaves a cube face goes to an optical circuit switch (OCS), which
connects it to the facing cube of the job's slice or back around to the slice's opposite face
(the wraparound). So the OCS builds, per job, a torus of the slice's shape out of whole cubes
(Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for Machine Learning with
Hardware Support for Embeddings", ISCA 2023; Cloud TPU v5p docs: slices of whole cubes, the
largest 16x16x24). An OCS is a mirror, not a packet switch: a circuit through it is one ICI link
(no switch hop, no queue), so the slice is a plain torus graph whose every link is an ICI link.

Twisted tori (Jouppi et al., ISCA 2023; Cloud TPU docs: "Supports twisted?" for n x n x 2n and
n x 2n x 2n slices): the OCS joins the wraparound of each short dimension (size n) to the far face
shifted by n along every long dimension (size 2n), the twisted torus of Camarero, Martinez and
Beivide ("Lattice graphs for high-scale interconnection topologies", IEEE TPDS 2015). The twist
shortens the long dimension's paths and raises the bisection, which all-to-all traffic feels.

One router per chip (routes never pass through a GPU) with the chip attached at its whole ICI
bandwidth, as :func:`fabricsim.topology.builders.torus`. Complexity O(chips x dims).
"""

from __future__ import annotations

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.topology.builders import LinkParams
from fabricsim.topology.graph import GraphBuilder, NodeKind, Topology

CUBE_SIDE = 4  # chips per cube edge: TPU v4/v5p 4x4x4 cubes (Cloud TPU v5p docs; Jouppi et al., ISCA 2023)


def check_slice(dims: tuple[int, ...], twisted: bool) -> None:
    """Refuse a slice that is not whole cubes, or a twist on a shape that has none."""
    if len(dims) != 3 or any(d < CUBE_SIDE or d % CUBE_SIDE for d in dims):
        raise FabricsimError(
            "dims", f"an OCS slice is 3 dimensions of whole {CUBE_SIDE}x{CUBE_SIDE}x{CUBE_SIDE} cubes, got "
            f"{'x'.join(map(str, dims))}", "e.g. ocs-torus:4x4x8 (every dimension a multiple of 4)"
        )  # fmt: skip
    if twisted and not _twistable(dims):
        raise FabricsimError(
            "twisted", f"a {'x'.join(map(str, dims))} slice has no twisted form",
            "twisted tori are n x n x 2n or n x 2n x 2n (e.g. 4x4x8, 4x8x8); use twisted=0"
        )  # fmt: skip


def _twistable(dims: tuple[int, ...]) -> bool:
    short, long = min(dims), max(dims)
    return long == 2 * short and all(d in (short, long) for d in dims)


def slice_pairs(dims: tuple[int, ...], twisted: bool) -> tuple[np.ndarray, np.ndarray]:
    """The ICI cables of a slice of shape ``dims`` (x fastest) as chip index pairs: each chip to
    its +1 neighbour along every dimension; the wraparound of a short dimension shifted by the short
    size along every long dimension when ``twisted`` (module docstring)."""
    coords = np.indices(dims[::-1]).reshape(len(dims), -1)[::-1].copy()
    strides = np.cumprod((1, *dims[:-1]))
    longest = max(dims)
    src, dst = [], []
    for d, size in enumerate(dims):
        target = coords.copy()
        target[d] = (coords[d] + 1) % size
        if twisted and size < longest:
            wraps = coords[d] == size - 1
            for e, other in enumerate(dims):
                if other == longest:
                    target[e] = np.where(wraps, (coords[e] + size) % other, coords[e])
        src.append(np.arange(coords.shape[1]))
        dst.append(strides @ target)
    return np.concatenate(src), np.concatenate(dst)


def ocs_torus(dims: tuple[int, ...], twisted: bool, ici: LinkParams, chip_Bps: float) -> Topology:
    """A slice of ``dims`` chips (whole 4x4x4 cubes) as the OCS wires it, regular or twisted: one
    router per chip (its chip attached at ``chip_Bps``, no latency: the router is on the die), the
    routers cabled by :func:`slice_pairs` at ``ici`` (per link, per direction)."""
    graph, chips = _slice_graph(dims, twisted, (ici.capacity_Bps,) * len(dims), ici.latency_s, chip_Bps)
    return graph.build(slice_name(dims, twisted), chips, chip_Bps, {"dims": len(dims), "twisted": float(twisted)})


def job_slice(
    dims: tuple[int, ...], twisted: bool, link_Bps: tuple[float, ...], latency_s: float, chip_Bps: float,
    chips_per_host: int,
) -> Topology:
    """The slice as a job's own fabric (``train``/``infer --topology ocs-torus:...`` on an OCS system):
    :func:`ocs_torus`'s graph with dimension d's cables at ``link_Bps[d]`` (the system's ICI link per
    direction), marked a system graph (``gpus_per_node``, no NIC), so its routers form the job's one
    scale-up domain and every chip pair's bytes are scale-up (ICI) bytes
    (:func:`fabricsim.topology.placement.pair_tiers`). No data-center network: the slice is the job."""
    graph, chips = _slice_graph(dims, twisted, link_Bps, latency_s, chip_Bps)
    meta = {"dims": len(dims), "twisted": float(twisted), "gpus_per_node": chips_per_host}
    return graph.build(slice_name(dims, twisted), chips, chip_Bps, meta)


def slice_name(dims: tuple[int, ...], twisted: bool) -> str:
    return "ocs-torus-" + "x".join(map(str, dims)) + ("-twisted" if twisted else "")


def _slice_graph(
    dims: tuple[int, ...], twisted: bool, link_Bps: tuple[float, ...], latency_s: float, chip_Bps: float
) -> tuple[GraphBuilder, np.ndarray]:
    check_slice(dims, twisted)
    count = int(np.prod(dims))
    graph = GraphBuilder()
    chips = graph.add_nodes(count, NodeKind.GPU)
    routers = graph.add_nodes(count, NodeKind.SWITCH)
    graph.connect(chips, routers, chip_Bps, 0.0)
    src, dst = slice_pairs(dims, twisted)  # dimension by dimension, ``count`` cables each
    if len(set(link_Bps)) == 1:  # one call: the link order of a uniform slice as it always was
        graph.connect(routers[src], routers[dst], link_Bps[0], latency_s)
        return graph, chips
    for d, capacity in enumerate(link_Bps):
        part = slice(d * count, (d + 1) * count)
        graph.connect(routers[src[part]], routers[dst[part]], capacity, latency_s)
    return graph, chips
