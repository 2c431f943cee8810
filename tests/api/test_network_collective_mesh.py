"""``collective --fidelity flow|packet`` on a full-mesh node (issue 25): ``auto`` schedules the
mesh (every pair link busy), and the simulated busbw meets but never beats the 7-link bound."""

from __future__ import annotations

import pytest

from fabricsim import catalog
from fabricsim.api.network_collective import NetworkCollectiveSpec, network_collective

LINKS_Bps = 7 * catalog.load_link("infinity-fabric-mi300").bandwidth_Bps  # 7 x 64 GB/s per GPU


@pytest.mark.parametrize("fidelity", ["flow", "packet"])
@pytest.mark.parametrize("op", ["all-reduce", "all-to-all"])
def test_auto_runs_the_mesh_at_the_link_bound(op, fidelity) -> None:
    result = network_collective(NetworkCollectiveSpec(op=op, system="mi300x-8", gpus=8, size="64MiB",
                                                      fidelity=fidelity)).result  # fmt: skip
    assert result.algorithm == "mesh"
    busbw_Bps = result.busbw_GBps * 1e9
    assert 0.9 * LINKS_Bps < busbw_Bps <= LINKS_Bps * (1 + 1e-9)


def test_a_ring_on_the_mesh_uses_one_link_per_gpu() -> None:
    """Why auto must not run one ring here: a single ring drives one of the 7 links of each GPU."""
    ring = network_collective(NetworkCollectiveSpec(op="all-reduce", system="mi300x-8", gpus=8, size="64MiB",
                                                    algorithm="ring")).result  # fmt: skip
    assert ring.busbw_GBps * 1e9 <= LINKS_Bps / 7 * (1 + 1e-9)
