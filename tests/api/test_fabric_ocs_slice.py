"""``train --topology ocs-torus:DxDxD[,twisted=1] --fidelity flow`` on an OCS system (issue 25
follow-up): the slice is the job's whole fabric (chips its endpoints, ICI links at the system's
per-direction bandwidth, the twist as given) and, for the analytic model, its system; it is not a
scale-out network behind the NICs. Bad combinations are one-line errors (exit 2)."""

from __future__ import annotations

import json

import pytest

from fabricsim import api, catalog
from fabricsim.api.fabric import FabricOptions, build_fabric, job_system
from fabricsim.cli.app import main
from fabricsim.collectives import parse_op
from fabricsim.collectives.ops import CollectiveOp
from fabricsim.collectives.placement import place_group
from fabricsim.collectives.torus import lattice_all_to_all_s_per_byte, reduce_scatter_s_per_byte
from fabricsim.errors import FabricsimError

SLICE = "ocs-torus:4x4x8"
DENSE = ("llama3-8b", "tpu-v5p", 128, 256, 2048)  # model, system, chips, global batch, seq len
MOE = ("qwen3-235b-a22b", "tpu-v5p", 128, 128, 4096)  # EP 128: one all-to-all over the whole slice


def test_tp_and_dp_bytes_land_in_the_ici_tier_not_the_spine(capsys) -> None:
    argv = ["train", "--model", "llama3-8b", "--system", "tpu-v5p", "--gpus", "128", "--global-batch", "256",
            "--seq-len", "2048", "--tp", "4", "--topology", f"{SLICE},twisted=1", "--fidelity", "flow", "--json"]
    assert main(argv) == 0
    network = json.loads(capsys.readouterr().out)["network"]
    assert network["topology"] == f"{SLICE},twisted=1"
    assert set(network["dimensions"]) == {"tp", "dp"}
    for dim in network["dimensions"].values():
        assert dim["highest_tier"] == "scale-up"
        tiers = dim["bytes_by_tier"]
        assert tiers["scale-up"] > 0 and tiers["leaf"] == tiers["spine"] == tiers["core"] == 0.0


def test_the_slice_is_the_jobs_fabric_and_its_system() -> None:
    v5p = catalog.load_system("tpu-v5p")
    system = job_system(v5p, 128, f"{SLICE},twisted=1")
    assert system.scale_up.dims == (4, 4, 8) and system.scale_up.domain_gpus == 128
    assert job_system(system, 128, f"{SLICE},twisted=1") == system  # idempotent
    placed = build_fabric(v5p, 128, "flow", FabricOptions(topology=f"{SLICE},twisted=1"))
    topology = placed.fabric.topology
    assert topology.name == "ocs-torus-4x4x8-twisted" and topology.hosts == 128
    assert placed.fabric.domain_gpus == 128
    # every router-to-router cable is one ICI link at v5p's per-direction bandwidth; no NIC, no switch tier
    routers = topology.node_kind[topology.link_src] == topology.node_kind[topology.link_dst]
    assert set(topology.capacity_Bps[routers].tolist()) == {v5p.scale_up.link.bandwidth_Bps}
    assert int(routers.sum()) == 2 * 3 * 128  # 3 cables per chip, both directions
    assert job_system(v5p, 128, None) is v5p and job_system(v5p, 128, "fat-tree:k=16") is v5p


def _rings_bound_s(system, payload) -> float:
    """The analytic torus model's bandwidth term of ``payload`` on the regular slice: no fabric run
    of it (regular or twisted, where the short dimensions lose their wraparound) can be faster."""
    group = place_group(system, payload.group_gpus, payload.group_stride)
    op = parse_op(payload.collective)
    phases = 2 if op is CollectiveOp.ALL_REDUCE else 1
    return phases * payload.size_bytes * reduce_scatter_s_per_byte(group.torus_rings)


@pytest.mark.parametrize("twisted", [0, 1])
def test_a_step_on_the_slice_never_beats_the_analytic_torus_bounds(twisted: int) -> None:
    topology = f"{SLICE},twisted={twisted}"
    result = api.simulate_train(*DENSE, fidelity="flow", topology=topology, tp=4)
    system = job_system(catalog.load_system("tpu-v5p"), 128, topology)
    alone = result.simulation.fabric_run.alone_s
    reduced = [(payload, t) for (_, _, payload), t in alone.items() if payload.collective != "send-recv"]
    assert {p.group_gpus for p, _ in reduced} == {4, 32}  # TP on x, DP on y and z
    for payload, time_s in reduced:
        bound_s = _rings_bound_s(system, payload)
        assert bound_s > 0 and time_s >= bound_s * (1 - 1e-9), (payload, time_s, bound_s)
    assert result.train.step_time_s >= result.analytic_step_time_s * (1 - 1e-9)


@pytest.fixture(scope="module")
def moe_runs() -> dict[int, object]:
    """The EP-heavy step on the regular and the twisted slice at flow fidelity (~25 s each)."""
    return {tw: api.simulate_train(*MOE, fidelity="flow", topology=f"{SLICE},twisted={tw}", ep=128) for tw in (0, 1)}


def _a2a(run) -> tuple[float, int]:
    (item,) = [(t, p.size_bytes) for (_, _, p), t in run.simulation.fabric_run.alone_s.items()
               if p.collective == "all-to-all"]  # fmt: skip
    return item


def test_a_twisted_slice_shortens_an_all_to_all_heavy_step(moe_runs) -> None:
    regular, twisted = moe_runs[0], moe_runs[1]
    assert _a2a(twisted)[0] < 0.9 * _a2a(regular)[0]  # the twist raises the bisection the all-to-all crosses
    busy = {tw: dict(run.comm_busy_s)["ep-all-to-all"] for tw, run in moe_runs.items()}
    assert busy[1] < busy[0]
    assert twisted.train.step_time_s < regular.train.step_time_s
    assert twisted.analytic_step_time_s == regular.analytic_step_time_s  # the analytic model sees the torus only


def test_the_slice_all_to_all_never_beats_the_channel_load_bound(moe_runs) -> None:
    links = catalog.load_system("tpu-v5p").scale_up.link.bandwidth_Bps
    for tw, run in moe_runs.items():
        time_s, size = _a2a(run)
        bound_s = size * lattice_all_to_all_s_per_byte((4, 4, 8), bool(tw), (links,) * 3)
        assert time_s >= bound_s * (1 - 1e-9), (tw, time_s, bound_s)


@pytest.mark.parametrize(("system", "gpus", "topology", "field"), [
    ("dgx-h100", 128, SLICE, "topology"),  # NVSwitch: no torus
    ("trn2-ultraserver", 128, SLICE, "topology"),  # a torus, but no OCS
    ("tpu-v5p", 64, SLICE, "gpus"),  # a 128-chip slice for 64 chips
    ("tpu-v5p", 128, f"{SLICE},system=tpu7x", "topology"),  # the ICI link is --system's
])  # fmt: skip
def test_bad_combinations_are_one_line_errors(capsys, system, gpus, topology, field) -> None:
    argv = ["train", "--model", "llama3-8b", "--system", system, "--gpus", str(gpus), "--global-batch", "256",
            "--seq-len", "2048", "--topology", topology, "--fidelity", "flow"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(FabricsimError) as caught:
        job_system(catalog.load_system(system), gpus, topology)
    assert caught.value.field == field


def test_plan_train_with_an_explicit_slice_searches_on_the_slice() -> None:
    """``plan train --topology ocs-torus:4x4x8 --refine 1``: the analytic search runs on the slice's
    torus, as ``ocs-torus:auto`` does on its default (here the same 4x4x8) shape, not on two cubes
    joined by the data-center network."""
    args = ("llama3-8b", "tpu-v5p", 128, 256, 2048)
    explicit = api.plan_train(*args, topology=SLICE, refine=1, top=1).to_json()["plans"][0]
    auto = api.plan_train(*args, topology="ocs-torus:auto", top=1).to_json()["plans"][0]
    cubes = api.plan_train(*args, top=1).to_json()["plans"][0]
    assert explicit["analytic_step_time_s"] == pytest.approx(auto["step_time_s"], rel=1e-12)
    assert explicit["analytic_step_time_s"] != pytest.approx(cubes["step_time_s"], rel=1e-6)
