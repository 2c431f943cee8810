"""Inference planner: valid layouts, pruning against brute force, SLO-limited batches, objectives."""

import pytest

from fabricsim import api
from fabricsim.catalog import load_model, load_system
from fabricsim.engine.inference.analytic import InferScenario, infer_estimate, largest_batch
from fabricsim.engine.inference.step import validate_layout
from fabricsim.errors import FabricsimError
from fabricsim.planner import InferGoal, InferObjective, InferQuestion, InferSpace, infer_space, search_infer
from fabricsim.planner.infer import infer_layouts

LLAMA = InferQuestion(load_model("llama3-70b"), load_system("dgx-h100"), 8, 1024, 256)
DEEPSEEK = InferQuestion(load_model("deepseek-v3"), load_system("h800"), 32, 1024, 256)


def test_layouts_are_valid_and_use_every_gpu() -> None:
    for question in (LLAMA, DEEPSEEK):
        layouts = infer_layouts(question, InferSpace())
        assert len(set(layouts)) == len(layouts) > 5
        for layout in layouts:
            validate_layout(question.model, layout)
            assert layout.replicas * layout.replica_gpus == question.gpus
    assert {layout.expert_parallel for layout in infer_layouts(DEEPSEEK, InferSpace())} >= {1, 8, 32}


def test_throughput_without_slo_takes_the_largest_batch_that_fits() -> None:
    search = search_infer(LLAMA, goal=InferGoal(top=50))
    assert search.feasible == len(search.plans) > 0
    for plan in search.plans:
        assert plan.batch_limit == "memory" and plan.estimate.fits
        scenario = InferScenario(LLAMA.model, LLAMA.system, plan.layout, 1024, 256, None)
        assert plan.estimate.batch == largest_batch(scenario)  # the KV budget's limit
    rates = [p.estimate.output_tokens_per_s for p in search.plans]
    assert rates == sorted(rates, reverse=True)


def test_tpot_slo_caps_the_batch_at_the_largest_meeting_it() -> None:
    slo = 0.02
    search = search_infer(LLAMA, goal=InferGoal(tpot_slo_s=slo, top=3))
    assert search.plans
    for plan in search.plans:
        assert plan.estimate.tpot_s <= slo
        if plan.batch_limit == "TPOT SLO":
            scenario = InferScenario(LLAMA.model, LLAMA.system, plan.layout, 1024, 256, plan.estimate.batch + 1)
            assert infer_estimate(scenario).tpot_s > slo
    assert search.plans[1].reasons and search.plans[1].reasons[0].startswith("output tok/s")


def test_slo_nobody_meets_is_an_empty_result() -> None:
    search = search_infer(LLAMA, goal=InferGoal(tpot_slo_s=1e-6))
    assert search.plans == () and search.feasible == 0 and search.pruned_slo > 0


def test_latency_objective_ranks_by_end_to_end_latency_at_batch_one() -> None:
    search = search_infer(LLAMA, goal=InferGoal(objective=InferObjective.LATENCY, top=4))
    latencies = [p.estimate.e2e_latency_s for p in search.plans]
    assert latencies == sorted(latencies)
    assert all(p.estimate.batch == 1 for p in search.plans)
    assert search.plans[1].reasons[0].startswith("latency +")


def test_nothing_fits_reports_the_smallest_need() -> None:
    question = InferQuestion(load_model("llama3-405b"), load_system("dgx-a100"), 4, 1024, 256)
    search = search_infer(question)
    assert search.feasible == 0 and search.plans == ()
    assert search.smallest_memory_bytes > 80e9 and search.smallest_memory_layout is not None


def test_constraints_and_errors() -> None:
    space = infer_space({"tp": [2, 4], "dtype": "bf16", "max_batch": 16})
    search = search_infer(LLAMA, space, InferGoal(top=20))
    assert {p.layout.tensor_parallel for p in search.plans} <= {2, 4}
    assert all(p.estimate.batch <= 16 and p.layout.weight_dtype == "bf16" for p in search.plans)
    with pytest.raises(FabricsimError, match="layout"):
        search_infer(LLAMA, infer_space({"tp": 3}))
    with pytest.raises(FabricsimError, match="dtype"):
        infer_space({"dtype": "int2"})
    for bad, field in (({"tp": 0}, "tp"), ({"batch": [1, 2]}, "batch"), ({"colour": 1}, "colour")):
        with pytest.raises(FabricsimError) as error:  # typed at the API edge (InferConstraints)
            api.plan_infer("llama3-8b", "dgx-h100", 8, 128, 16, constraints=bad)
        assert field in error.value.field


def test_api_contract_and_determinism() -> None:
    first = api.plan_infer("llama3-70b", "dgx-h100", 8, 1024, 256, slo_tpot_s=0.03, top=3).to_json()
    second = api.plan_infer("llama3-70b", "dgx-h100", 8, 1024, 256, slo_tpot_s="30ms", top=3).to_json()
    assert first.pop("elapsed_s") >= 0 and second.pop("elapsed_s") >= 0
    assert first == second
    assert first["kind"] == "infer" and first["evaluated"] >= first["feasible"] > 0
    plan = first["plans"][0]
    assert {"ttft_s", "tpot_s", "e2e_latency_s", "batch", "output_tokens_per_s", "layout", "batch_limit"} <= set(plan)
    with pytest.raises(FabricsimError, match="slo-tpot"):
        api.plan_infer("llama3-70b", "dgx-h100", 8, 1024, 256, slo_tpot_s=0.0)
    with pytest.raises(FabricsimError, match="objective"):
        api.plan_infer("llama3-70b", "dgx-h100", 8, 1024, 256, objective="cheap")


@pytest.mark.parametrize("slo", [None, 0.02, 1e-6])
def test_counts_mean_what_their_names_say(slo) -> None:
    """Issue 27: "evaluated 278 layouts ... costed 2,102" -- costed counted engine calls. Layouts:
    evaluated = pruned by memory + costed, costed = feasible + missing the SLOs; estimates (batch
    sizes priced by the bisection) are counted apart."""
    search = search_infer(LLAMA, goal=InferGoal(tpot_slo_s=slo))
    assert search.feasible <= search.costed <= search.evaluated
    assert search.costed + search.pruned_memory == search.evaluated == len(infer_layouts(LLAMA, InferSpace()))
    assert search.feasible + search.pruned_slo == search.costed
    assert search.estimates >= search.costed  # with an SLO the bisection prices several batch sizes
    if slo == 0.02:
        assert search.estimates > search.costed


def test_plan_infer_json_keeps_the_slo_out_of_the_before_costing_prunes() -> None:
    out = api.plan_infer("llama3-70b", "dgx-h100", 8, 1024, 256, slo_tpot_s=0.02).to_json()
    assert out["costed"] <= out["evaluated"] and out["estimates"] >= out["costed"]
    assert out["costed"] + sum(out["pruned"].values()) == out["evaluated"]
    assert out["feasible"] + out["rejected_slo"] == out["costed"]
