"""``collective --fidelity flow`` on a torus domain (issue 25): ``auto`` schedules the per-dimension
rings of collectives/torus.py over the ICI graph; the simulated all-reduce busbw meets but never
beats the rings' bound (a v5p cube: 3 wrapped rings x 2 links x 100 GB/s = 600 GB/s per chip), and
beats one NCCL ring, which drives a single link per direction."""

from __future__ import annotations

from fabricsim import catalog
from fabricsim.api.network_collective import NetworkCollectiveSpec, network_collective

RINGS_Bps = 3 * 2 * catalog.load_link("ici-v5p").bandwidth_Bps


def _run(op: str, algorithm: str = "auto"):
    spec = NetworkCollectiveSpec(op=op, system="tpu-v5p", gpus=64, size="64MiB", fidelity="flow", algorithm=algorithm)
    return network_collective(spec).result


def test_auto_runs_the_torus_rings_under_their_bound() -> None:
    result = _run("all-reduce")
    assert result.algorithm == "torus"
    assert 0.8 * RINGS_Bps < result.busbw_GBps * 1e9 <= RINGS_Bps * (1 + 1e-9)


def test_one_ring_on_the_torus_is_slower() -> None:
    assert _run("all-reduce", "ring").time_s > 2 * _run("all-reduce").time_s


def test_all_to_all_is_routed_over_the_torus_and_bisection_limited() -> None:
    """4x4x4: a cut across one dimension crosses 2 x 16 links each way; p S / 4 bytes must cross."""
    result = _run("all-to-all")
    bisection_s = 64 * 64 * 2**20 / 4 / (2 * 16 * catalog.load_link("ici-v5p").bandwidth_Bps)
    assert result.algorithm == "torus" and result.time_s >= bisection_s * (1 - 1e-9)
