"""The OCS slice builder (issue 25): ``ocs-torus:4x4x8,twisted=1`` builds a slice's torus from whole
4x4x4 cubes, regular or twisted (Jouppi et al., ISCA 2023), with the ICI link of tpu-v5p."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.api.topologies import build_topology
from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.topology.graph import NodeKind
from fabricsim.topology.ocs import slice_pairs


def _pairs(dims, twisted) -> set[tuple[int, int]]:
    src, dst = slice_pairs(dims, twisted)
    return {tuple(sorted(p)) for p in zip(src.tolist(), dst.tolist(), strict=True)}


@pytest.mark.parametrize("twisted", [False, True])
def test_every_chip_has_six_ici_links(twisted) -> None:
    src, dst = slice_pairs((4, 4, 8), twisted)
    degree = np.bincount(np.concatenate([src, dst]), minlength=128)
    assert np.all(degree == 6) and len(_pairs((4, 4, 8), twisted)) == 128 * 3


def test_the_twist_moves_only_the_short_dimensions_wraparound() -> None:
    regular, twisted = _pairs((4, 4, 8), False), _pairs((4, 4, 8), True)
    moved = regular - twisted
    # x wraps (x=3 -> x=0) and y wraps (y=3 -> y=0): 4 x 8 each, now landing 4 further along z
    assert len(moved) == 2 * 32
    assert (3, 64) in twisted - regular  # chip (3,0,0) wraps to (0,0,4): index 0 + 4 x 16
    assert (0, 3) in moved  # the regular x wraparound of row (y=0, z=0)


def test_ocs_torus_builds_from_the_builder_string() -> None:
    topo = build_topology("ocs-torus:4x4x8,twisted=1")
    assert topo.hosts == 128 and topo.name == "ocs-torus-4x4x8-twisted"
    switch = topo.node_kind == NodeKind.SWITCH
    ici = switch[topo.link_src] & switch[topo.link_dst]
    assert np.all(topo.capacity_Bps[ici] == 100e9)  # tpu-v5p ICI link, per direction


@pytest.mark.parametrize(
    ("text", "field"),
    [("ocs-torus:4x4x6", "dims"), ("ocs-torus:4x4", "dims"), ("ocs-torus:4x4x12,twisted=1", "twisted"),
     ("ocs-torus:4x4x8,twisted=yes", "twisted"), ("ocs-torus:4x4x8,system=dgx-h100", "system")],
)  # fmt: skip
def test_bad_slices_are_refused_naming_the_field(text, field) -> None:
    with pytest.raises(FabricsimError) as info:
        build_topology(text)
    # the error names the topology option; the key it is about leads its message (dims: ...)
    assert info.value.field == "topology" and (field == "topology" or f" {field}: " in info.value.problem)


def test_cli_refuses_a_bad_slice_in_one_line(capsys) -> None:
    assert main(["traffic", "all-to-all", "--topology", "ocs-torus:4x4x6"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "dims" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [
    ["train", "--global-batch", "64", "--seq-len", "1024"],
    ["infer", "--batch", "8", "--input-len", "256", "--output-len", "16"],
    ["collective", "all-to-all", "--size", "64MiB"],
])  # fmt: skip
def test_train_infer_and_collective_accept_an_ocs_slice(capsys, command) -> None:
    model = [] if command[0] == "collective" else ["--model", "llama3-8b", "--tp", "4"]
    argv = [*command, *model, "--system", "tpu-v5p", "--gpus", "128", "--topology", "ocs-torus:4x4x8,twisted=1",
            "--fidelity", "flow", "--json"]  # fmt: skip
    assert main(argv) == 0
    assert '"fidelity": "flow"' in capsys.readouterr().out


def test_a_job_slice_is_one_scale_up_domain_and_a_standalone_slice_is_a_router_fabric() -> None:
    """As a job's fabric (a system graph: no NIC) every chip pair of the slice is scale-up (ICI);
    the ``traffic`` builder's slice keeps the router-hop tiers of a torus network."""
    import numpy as np

    from fabricsim.topology.ocs import job_slice
    from fabricsim.topology.placement import pair_tiers

    src, dst = np.repeat(np.arange(128), 128), np.tile(np.arange(128), 128)
    job = job_slice((4, 4, 8), True, (45e9, 45e9, 90e9), 1e-6, 270e9, 4)
    assert not pair_tiers(job, src, dst).any()
    assert set(job.capacity_Bps.tolist()) == {270e9, 45e9, 90e9}  # chip attach; x and y links; z links
    standalone = build_topology("ocs-torus:4x4x8,twisted=1")
    assert pair_tiers(standalone, src, dst).max() == 3
