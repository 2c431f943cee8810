"""Flows between two chips of one torus domain stay on its scale-up links (topology/routing.py):
a slice's chips talk over ICI, only slices talk over the data-center network (Cloud TPU docs).
By hops alone, a job of two TPU v6e pods sent 93% of its in-pod chip pairs over the NIC path
(GPU-NIC-leaf-NIC-GPU, 4 hops) rather than ICI paths of up to 16 hops; two v5p cubes 51%."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.topology.graph import NodeKind
from fabricsim.topology.routing import FlowEnds, Routing, route, route_table
from fabricsim.topology.system import build_system_topology


def _pairs(first: int, count: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    chips = np.arange(first, first + count, step)
    a, b = np.meshgrid(chips, chips)
    keep = a != b
    return a[keep], b[keep]


def _torus_hops(dims: tuple[int, ...], a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ICI hops between chips a and b of one torus (x fastest), wraparound included."""
    hops = np.zeros(a.size, dtype=np.int64)
    for size in dims:
        d = np.abs(a % size - b % size)
        hops += np.minimum(d, size - d)
        a, b = a // size, b // size
    return hops


def _links_per_flow(name: str, gpus: int, src: np.ndarray, dst: np.ndarray, routing: Routing):
    topology = build_system_topology(catalog.load_system(name), gpus)
    ends = FlowEnds(src, dst, np.zeros(src.size), np.zeros(src.size, dtype=np.int64))
    incidence = route(route_table(topology), ends, routing, 0).incidence.tocsc()
    kind = topology.node_kind
    nic = (kind[topology.link_src] == NodeKind.NIC) | (kind[topology.link_dst] == NodeKind.NIC)
    return incidence, nic


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize(("name", "gpus", "step"), [("tpu-v6e", 512, 3), ("tpu-v5p", 128, 1)])
def test_in_domain_pairs_of_a_two_domain_job_never_touch_a_nic(routing, name, gpus, step) -> None:
    system = catalog.load_system(name)
    domain = system.scale_up.domain_gpus
    src, dst = _pairs(domain, domain, step)  # pairs of the second domain (v6e: every third chip)
    incidence, nic = _links_per_flow(name, gpus, src, dst, routing)
    assert incidence[nic].nnz == 0
    if routing is not Routing.SPRAY:  # one shortest ICI path each: chip -> router, the hops, router -> chip
        per_flow = np.diff(incidence.indptr)
        assert np.array_equal(per_flow, 2 + _torus_hops(system.scale_up.dims, src - domain, dst - domain))


def test_pairs_across_the_domains_still_cross_the_nics() -> None:
    src = np.arange(0, 256, 5)
    incidence, nic = _links_per_flow("tpu-v6e", 512, src, src + 256, Routing.ECMP)
    per_flow = np.asarray(incidence[nic].sum(axis=0)).ravel()
    assert np.all(per_flow == 4)  # chip -> NIC -> leaf, then leaf -> NIC -> chip


def test_no_flows_route_to_an_empty_matrix() -> None:
    topology = build_system_topology(catalog.load_system("tpu-v6e"), 512)
    none = np.zeros(0, dtype=np.int64)
    routes = route(route_table(topology), FlowEnds(none, none, np.zeros(0), none), Routing.ECMP, 0)
    assert routes.incidence.shape == (topology.links, 0)
