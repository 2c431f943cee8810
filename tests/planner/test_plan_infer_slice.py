"""``plan infer --topology ocs-torus:auto|AxBxC``: each serving plan's OCS slice shape and twist
(planner/slice.py, api plan_infer; issue 25 item 3)."""

import json

import pytest

from fabricsim import api, catalog
from fabricsim.cli.app import main
from fabricsim.collectives import parse_op
from fabricsim.collectives.times import CollectiveTimes
from fabricsim.collectives.torus import lattice_all_to_all_s_per_byte
from fabricsim.engine.inference.analytic import InferScenario, infer_estimate
from fabricsim.engine.inference.step import InferenceLayout
from fabricsim.errors import FabricsimError
from fabricsim.planner import slice as sl

V5P = catalog.load_system("tpu-v5p")
LENGTHS = (1024, 256)


def _plans(model: str, gpus: int, top: int = 2, **constraints: int) -> dict:
    result = api.plan_infer(model, "tpu-v5p", gpus, *LENGTHS, top=top, constraints=constraints,
                            topology="ocs-torus:auto")  # fmt: skip
    return result.to_json()


@pytest.mark.parametrize(
    ("model", "layout", "batch"),
    [
        ("llama3-70b", InferenceLayout(8, 2, 1, "bf16", "bf16", 8), 64),
        ("deepseek-v3", InferenceLayout(1, 1, 128, "fp8", "fp8", 1), 512),
    ],
)
def test_the_collectives_are_the_step_models_own(model, layout, batch):
    """Timed by the system's collective model, the list adds up to the estimate's communication time
    for the batch: its prefill chunks plus (output - 1) decode steps."""
    system = sl.slice_system(V5P, (4, 4, 8))
    scenario = InferScenario(catalog.load_model(model), system, layout, *LENGTHS, batch)
    times = CollectiveTimes(system)
    total = sum(calls * times.time_s(parse_op(p.collective), p.size_bytes, p.group_gpus, p.group_stride)
                for _, p, calls in sl.infer_collectives(scenario))  # fmt: skip
    estimate = infer_estimate(scenario)
    expected = estimate.prefill.communication_s + (LENGTHS[1] - 1) * estimate.decode.communication_s
    assert total == pytest.approx(expected, rel=1e-6) and total > 0
    kinds = {name.split()[1] for name, _, _ in sl.infer_collectives(scenario)}
    assert kinds == ({"tp-all-reduce", "pp-send-recv"} if model == "llama3-70b" else {"ep-all-to-all"})


def test_a_tp_group_gets_a_whole_plane():
    # TP 16 on the default 4x8x8 half-fills y (an open line); 4x4x16 gives it the whole x-y plane
    payload = _plans("llama3-70b", 256, tp=16, pp=1)
    assert payload["slice_search"] == {**payload["slice_search"], "default_dims": "4x8x8", "candidates": 9}
    for plan in payload["plans"]:
        pick = plan["slice"]
        assert pick["dims"] == "4x4x16" and not pick["twisted"]
        assert pick["collective_s"] < 0.9 * pick["default"]["collective_s"]
        assert pick["collective_s"] <= pick["runner_up"]["collective_s"]
        assert set(pick["by_collective_s"]) == {"prefill tp-all-reduce", "decode tp-all-reduce"}


def test_the_pick_is_the_least_time_over_every_candidate():
    payload = _plans("llama3-70b", 128, top=1, tp=8, pp=2)
    plan = payload["plans"][0]
    layout = InferenceLayout(8, 2, 1, plan["layout"]["dtype"], plan["layout"]["kv_dtype"], 8)
    system = sl.slice_system(V5P, (4, 4, 8))
    scenario = InferScenario(catalog.load_model("llama3-70b"), system, layout, *LENGTHS, plan["batch"])
    collectives = sl.infer_collectives(scenario)
    costs = [sl.cost_slice(collectives, s, V5P).collective_s for s in sl.slice_shapes(128, sl.PODS["tpu-v5p"])]
    assert plan["slice"]["collective_s"] == pytest.approx(min(costs), rel=1e-12)
    assert plan["slice"]["candidates"] == len(costs) == 6


def test_an_expert_parallel_all_to_all_over_the_slice_picks_the_twist():
    """Jouppi et al., ISCA 2023, sec. 2.8: the twisted torus raises all-to-all throughput on 4x4x8."""
    payload = _plans("deepseek-v3", 128, top=1, tp=1, ep=128)
    pick = payload["plans"][0]["slice"]
    assert pick["twisted"] and sorted(map(int, pick["dims"].split("x"))) == [4, 4, 8]
    assert set(pick["by_collective_s"]) == {"prefill ep-all-to-all", "decode ep-all-to-all"}
    gain = pick["default"]["collective_s"] / pick["collective_s"]
    links = (V5P.scale_up.link.bandwidth_Bps,) * 3
    lattice = lattice_all_to_all_s_per_byte((4, 4, 8), False, links) / lattice_all_to_all_s_per_byte(
        (4, 4, 8), True, links
    )
    assert 1.05 < gain < lattice  # the hop latency of the small decode all-to-alls is the same on both


def test_a_twist_is_not_picked_where_it_cuts_the_tp_ring():
    # TP 4 on x of a 4x4x8 slice: twisted, x's wraparound leaves the TP group (an open line of 4)
    for plan in _plans("llama3-8b", 128, tp=4)["plans"]:
        assert not plan["slice"]["twisted"]


def test_an_explicit_slice_is_each_plans_only_candidate():
    result = api.plan_infer("deepseek-v3", "tpu-v5p", 128, *LENGTHS, top=1, constraints={"tp": 1, "ep": 128},
                            topology="ocs-torus:4x4x8,twisted=1").to_json()  # fmt: skip
    pick = result["plans"][0]["slice"]
    assert (pick["dims"], pick["twisted"], pick["candidates"], pick["runner_up"]) == ("4x4x8", True, 1, None)
    assert pick["topology"] == "ocs-torus:4x4x8,twisted=1" and pick["default"] == {**pick["default"], "twisted": True}
    assert result["slice_search"]["default_dims"] == "4x4x8,twisted=1"


def test_without_a_topology_there_is_no_slice():
    result = api.plan_infer("llama3-8b", "tpu-v5p", 128, *LENGTHS, top=1, constraints={"tp": 4}).to_json()
    assert "slice_search" not in result and "slice" not in result["plans"][0]


@pytest.mark.parametrize(
    ("system", "gpus", "topology", "field"),
    [
        ("dgx-h100", 128, "ocs-torus:auto", "topology"),
        ("dgx-h100", 128, "ocs-torus:4x4x8", "topology"),
        ("tpu-v5p", 128, "fat-tree:k=16", "topology"),
        ("tpu-v5p", 96, "ocs-torus:auto", "gpus"),
        ("tpu-v5p", 256, "ocs-torus:4x4x8", "gpus"),
        ("tpu-v5p", 128, "ocs-torus:auto,twisted=1", "topology"),
    ],
)
def test_refusals_name_the_option(system, gpus, topology, field):
    with pytest.raises(FabricsimError) as error:
        api.plan_infer("llama3-8b", system, gpus, *LENGTHS, top=1, topology=topology)
    assert error.value.field == field


CLI = ["plan", "infer", "--model", "llama3-8b", "--system", "tpu-v5p", "--input-len", "1024", "--output-len", "256"]


def test_cli_json_and_table(capsys):
    rc = main([*CLI, "--gpus", "128", "--tp", "4", "--top", "1", "--topology", "ocs-torus:auto", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and payload["slice_search"]["candidates"] == 6 and "slice" in payload["plans"][0]
    rc = main([*CLI, "--gpus", "128", "--tp", "4", "--top", "1", "--topology", "ocs-torus:auto"])
    out = " ".join(capsys.readouterr().out.split())  # the table may wrap its title
    assert rc == 0 and "OCS slice per plan" in out and "collectives per batch of requests" in out


@pytest.mark.parametrize(
    "extra",
    [["--system", "dgx-h100", "--gpus", "128"], ["--system", "tpu-v5p", "--gpus", "128", "--topology", "torus:4x4"]],
)
def test_cli_refusal_is_one_line_exit_2(capsys, extra):
    base = [a for a in CLI if a not in ("--system", "tpu-v5p")]
    topology = [] if "--topology" in extra else ["--topology", "ocs-torus:auto"]
    rc = main([*base, *extra, *topology])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "topology" in err and "Traceback" not in err
