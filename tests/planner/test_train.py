"""Training planner: lossless pruning (against brute force), ranking, published layout, no-fit results."""

import pytest

from fabricsim import api
from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import estimate_training
from fabricsim.errors import FabricsimError
from fabricsim.planner import PlanSettings, TrainObjective, TrainQuestion, TrainSpace, search_train
from fabricsim.planner import space as sp
from fabricsim.planner.train import layout_key, train_problem

SMALL = TrainQuestion(load_model("mixtral-8x22b"), load_system("dgx-b200"), 16, 32, 2048)


def _brute_force(question: TrainQuestion) -> list:
    """Every valid layout, costed without any pruning."""
    problem, space = train_problem(question), TrainSpace()
    out = []
    for group in sp.train_groups(problem, space):
        for mb in sp.micro_batches(problem, space, group):
            m = problem.global_batch // (group.data_parallel * mb)
            for zero in sp.zero_options(space, group):
                for vpp in sp.virtual_options(problem, space, group, m):
                    layout = group.layout(mb, zero, vpp)
                    out.append(estimate_training(question.model, question.system, layout, 32, 2048))
    return out


@pytest.fixture(scope="module")
def brute() -> list:
    return _brute_force(SMALL)


@pytest.mark.parametrize("objective", [TrainObjective.TOKENS_PER_S, TrainObjective.MEMORY])
def test_pruning_loses_nothing(brute: list, objective: TrainObjective) -> None:
    search = search_train(SMALL, settings=PlanSettings(top=7, objective=objective))
    fitting = [e for e in brute if e.fits]
    assert search.evaluated == len(brute)
    assert search.feasible == len(fitting)
    assert search.costed + search.pruned_memory + search.pruned_unsized + search.pruned_time == search.evaluated
    assert search.costed < len(brute) / 3  # most layouts are never timed
    if objective is TrainObjective.MEMORY:
        expected = sorted(fitting, key=lambda e: (e.memory.total, e.step_time_s, layout_key(e.layout)))
    else:
        expected = sorted(fitting, key=lambda e: (e.step_time_s, e.memory.total, layout_key(e.layout)))
    assert [p.estimate.layout for p in search.plans] == [e.layout for e in expected[:7]]
    assert search.plans[0].reasons == ()
    assert all(p.reasons for p in search.plans[1:])
    smallest = min(brute, key=lambda e: e.memory.total)
    assert search.smallest_memory_bytes == pytest.approx(smallest.memory.total)


def test_plan_beats_the_published_layout() -> None:
    """GPT-3 175B on 1,024 A100s, batch 1536 (Narayanan et al. SC'21: TP8 PP8 DP16), as fabricsim predicts it."""
    free = {"overlap_grad_reduce": True, "overlap_param_gather": True, "tp_comm_overlap": True, "a2a_overlap": True}
    published = api.train("gpt3-175b", "dgx-a100", 1024, 1536, 2048, tp=8, pp=8, **free)  # the planner's choice
    assert published.fits
    plan = api.plan_train("gpt3-175b", "dgx-a100", 1024, 1536, 2048, top=3)
    best = plan.plans[0].result
    assert best.fits
    assert best.step_time_s <= published.step_time_s
    assert plan.evaluated > 100_000 and plan.feasible > 0


def test_published_layout_is_in_the_space() -> None:
    fixed = {"tp": 8, "pp": 8, "cp": 1, "vpp": 1, "micro_batch": 1, "zero": 0, "recompute": "none"}
    plan = api.plan_train(
        "gpt3-175b", "dgx-a100", 1024, 1536, 2048, top=1, constraints=fixed | {"sequence_parallel": True}
    )
    free = {"overlap_grad_reduce": True, "overlap_param_gather": True, "tp_comm_overlap": True, "a2a_overlap": True}
    published = api.train("gpt3-175b", "dgx-a100", 1024, 1536, 2048, tp=8, pp=8, **free)  # the planner's choice
    assert plan.evaluated == 1
    assert plan.plans[0].result.to_json() == published.to_json()


def test_nothing_fits_is_a_result() -> None:
    plan = api.plan_train("megatron-1t", "dgx-a100", 8, 8, 2048)
    assert plan.feasible == 0 and plan.plans == ()
    assert plan.evaluated > 0
    assert plan.smallest_memory_per_gpu_bytes > 80e9
    assert plan.to_json()["smallest_memory_layout"]["tp"] * plan.to_json()["smallest_memory_layout"]["pp"] == 8


def test_deterministic_apart_from_elapsed() -> None:
    first = api.plan_train("mixtral-8x22b", "dgx-b200", 16, 32, 2048, top=4).to_json()
    second = api.plan_train("mixtral-8x22b", "dgx-b200", 16, 32, 2048, top=4).to_json()
    first.pop("elapsed_s")
    second.pop("elapsed_s")
    assert first == second


def test_progress_reports_every_group() -> None:
    calls: list[tuple[int, int]] = []
    search = search_train(SMALL, on_progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (search.groups, search.groups)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)


def test_refine_re_times_the_best_plans_with_the_simulator() -> None:
    plan = api.plan_train("llama3-8b", "dgx-h100", 8, 16, 2048, top=3, refine=2, constraints={"tp": [2, 4]})
    payload = plan.to_json()
    assert payload["refined"] == 2
    fidelities = [p["fidelity"] for p in payload["plans"]]
    assert fidelities == ["simulate", "simulate", "analytic"]
    refined = [p["step_time_s"] for p in payload["plans"][:2]]
    assert refined == sorted(refined)
    assert all(p["analytic_step_time_s"] > 0 for p in payload["plans"][:2])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"top": 0}, "top"),
        ({"refine": -1}, "refine"),
        ({"objective": "fastest"}, "objective"),
        ({"constraints": {"tp": 3}}, "tp"),
    ],
)
def test_bad_requests(kwargs: dict, field: str) -> None:
    with pytest.raises(FabricsimError) as error:
        api.plan_train("gpt3-175b", "dgx-a100", 64, 128, 2048, **kwargs)
    assert error.value.field == field


def test_a_faster_layout_that_does_not_fit_is_named() -> None:
    payload = api.plan_train("gpt3-175b", "dgx-a100", 64, 128, 2048, top=2).to_json()
    unfit = payload["faster_but_unfit"]
    assert unfit["step_time_s"] < payload["plans"][0]["step_time_s"]
    assert unfit["memory_per_gpu_bytes"] > unfit["memory_capacity_bytes"]
    memory_first = api.plan_train("gpt3-175b", "dgx-a100", 64, 128, 2048, objective="memory").to_json()
    assert "faster_but_unfit" not in memory_first
