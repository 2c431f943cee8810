"""Offload search in ``plan train``: exact against brute force, Calculon's megatron-1t problem, edges."""

from pathlib import Path

import pytest

from fabricsim import api
from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.errors import FabricsimError
from fabricsim.planner import PlanSettings, TrainObjective, TrainQuestion, TrainSpace, offload_choices, search_train
from fabricsim.planner import space as sp
from fabricsim.planner.train import layout_key, offload_step_bound, plan_key, train_problem
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.specs.memory_tier import parse_offload
from fabricsim.workload.training import TrainingOptions

ROOT = Path(__file__).resolve().parents[2]
CALCULON_SYSTEM = str(ROOT / "examples" / "systems" / "dgx-a100-calculon.yaml")
TIGHT = TrainQuestion(load_model("llama3-70b"), load_system("dgx-a100"), 8, 16, 4096)


def _variants(question: TrainQuestion, every: bool) -> list:
    """Every valid layout costed without pruning, with every offload choice that fits (``every``) or
    only for the layouts that do not fit by themselves (what the step objective searches)."""
    problem, space = train_problem(question), TrainSpace()
    ctx = training_context(question.model, question.system)
    choices = offload_choices(question.system)
    out = []
    for group in sp.train_groups(problem, space):
        for mb in sp.micro_batches(problem, space, group):
            m = problem.global_batch // (group.data_parallel * mb)
            for zero in sp.zero_options(space, group):
                for vpp in sp.virtual_options(problem, space, group, m):
                    layout = group.layout(mb, zero, vpp)
                    base = ctx.estimate(layout, question.global_batch, question.seq_len)
                    out.append(base)
                    if every or not base.fits:
                        out += [ctx.estimate(layout, question.global_batch, question.seq_len, c) for c in choices]
    return [e for e in out if e.fits]


@pytest.mark.parametrize("objective", [TrainObjective.STEP_TIME, TrainObjective.MEMORY])
def test_offload_search_loses_nothing(objective: TrainObjective) -> None:
    choices = offload_choices(TIGHT.system)
    search = search_train(TIGHT, settings=PlanSettings(top=6, objective=objective, offload=choices))
    fitting = _variants(TIGHT, every=objective is TrainObjective.MEMORY)
    if objective is TrainObjective.MEMORY:
        expected = sorted(fitting, key=lambda e: (e.memory.total, e.step_time_s, plan_key(e)))
    else:
        expected = sorted(fitting, key=lambda e: (e.step_time_s, e.memory.total, plan_key(e)))
    assert [plan_key(p.estimate) for p in search.plans] == [plan_key(e) for e in expected[:6]]
    assert all(p.estimate.fits for p in search.plans)
    fastest = min(e.step_time_s for e in _variants(TIGHT, every=True))
    if objective is TrainObjective.STEP_TIME:  # the fastest over every (layout, offload) pair
        assert search.plans[0].estimate.step_time_s == fastest
    without = search_train(TIGHT, settings=PlanSettings(top=6, objective=objective))
    assert search.feasible > without.feasible and search.evaluated == without.evaluated
    assert search.costed + search.pruned_memory + search.pruned_unsized + search.pruned_time == search.evaluated


def test_offload_makes_more_layouts_fit_and_every_plan_fits_its_tiers() -> None:
    result = api.plan_train("llama3-70b", "dgx-a100", 8, 16, 4096, top=5).to_json()
    none = api.plan_train("llama3-70b", "dgx-a100", 8, 16, 4096, top=5, search_offload=False).to_json()
    assert result["feasible"] > none["feasible"]
    assert all("offload" not in plan["layout"] for plan in none["plans"])
    for plan in result["plans"]:
        assert plan["fits"]
        if "offload" in plan["layout"]:
            tiers = plan["memory_breakdown_bytes_by_tier"]
            capacity = plan["memory_capacity_bytes_by_tier"]
            assert all(sum(tiers[t].values()) <= capacity[t] for t in tiers)
            assert plan["memory_overflow_tiers"] == []


_OPTION_FIELDS = {
    "flash_attention": "flash_attention",
    "overlap_grad_reduce": "overlap_grad_reduce",
    "overlap_param_gather": "overlap_param_gather",
    "tp_comm_overlap": "overlap_tp_comm",
    "a2a_overlap": "a2a_overlap",
}


def _options_of(result) -> TrainingOptions:
    """The framework settings a plan ran with (reported since the settings of issue 10b; before
    them every plan ran with the defaults)."""
    given = dict(getattr(result, "options", ()))
    return TrainingOptions(**{_OPTION_FIELDS[k]: v for k, v in given.items() if k in _OPTION_FIELDS})


def test_calculon_problem_plan_is_at_least_as_fast_as_calculons_plan() -> None:
    """megatron-1t, 3,072 A100, batch 3,072, sequence 2,048, offload allowed (issue 11): the plan
    is at least as fast as Calculon's plan run with the same framework settings."""
    result = api.plan_train("megatron-1t", CALCULON_SYSTEM, 3072, 3072, 2048, top=3)  # its time: bench_plan.py
    best = result.plans[0].result
    model, system = load_model("megatron-1t"), load_system(CALCULON_SYSTEM)
    layout = ParallelLayout(8, 1, 384, 1, 1, 1, 8, 1, Recompute.SELECTIVE, True, "bf16")
    everything = parse_offload("optimizer,weights,activations")
    calculon = training_context(model, system, _options_of(best)).estimate(layout, 3072, 2048, everything)
    assert calculon.fits
    assert best.fits and best.step_time_s <= calculon.step_time_s


def test_offload_search_errors_name_the_field() -> None:
    with pytest.raises(FabricsimError) as error:
        api.plan_train("llama3-8b", "h800", 8, 16, 2048, search_offload=True)
    assert error.value.field == "search-offload"
    with pytest.raises(FabricsimError) as error:
        api.plan_train("llama3-8b", "dgx-h100", 8, 16, 2048, offload_tier="grace")
    assert error.value.field == "offload-tier" and "no grace memory tier" in str(error.value)
    with pytest.raises(FabricsimError) as error:
        api.plan_train("llama3-8b", "dgx-h100", 8, 16, 2048, offload_tier="host", search_offload=False)
    assert error.value.field == "offload-tier"
    quiet = api.plan_train("llama3-8b", "h800", 8, 16, 2048, top=1)  # no tier: searched without offload
    assert quiet.plans


def test_refine_keeps_offloaded_plans_analytic() -> None:
    result = api.plan_train("llama3-70b", "dgx-a100", 8, 16, 4096, top=2, refine=2)
    assert result.refined == 0  # every plan offloads; the event-driven engine does not model offload
    assert all(entry.result.fidelity == "analytic" for entry in result.plans)


@pytest.mark.parametrize(
    ("model", "system", "gpus", "batch", "seq", "objective"),
    [
        ("llama3-70b", "dgx-a100", 8, 16, 4096, TrainObjective.STEP_TIME),
        ("gpt3-175b", "dgx-a100", 64, 64, 2048, TrainObjective.STEP_TIME),
        ("llama3-70b", "dgx-h100", 32, 64, 8192, TrainObjective.STEP_TIME),
        ("mixtral-8x22b", "dgx-a100", 32, 64, 4096, TrainObjective.STEP_TIME),
        ("llama3-70b", "dgx-a100", 8, 16, 4096, TrainObjective.MEMORY),
    ],
)
def test_offload_bounds_keep_the_plans(model, system, gpus, batch, seq, objective) -> None:
    """Issue 27: the bounds on offload variants (planner/train.py, step 4) skip sizing and timing,
    never a plan: the ranked plans equal those of the search that sizes and times every variant."""
    question = TrainQuestion(load_model(model), load_system(system), gpus, batch, seq)
    choices = offload_choices(question.system)
    bounded = search_train(question, settings=PlanSettings(top=8, objective=objective, offload=choices))
    every = PlanSettings(top=8, objective=objective, offload=choices, bound_offload=False)
    full = search_train(question, settings=every)
    assert [plan_key(p.estimate) for p in bounded.plans] == [plan_key(p.estimate) for p in full.plans]
    assert [p.estimate.step_time_s for p in bounded.plans] == [p.estimate.step_time_s for p in full.plans]
    assert bounded.evaluated == full.evaluated and bounded.costed <= full.costed
    assert bounded.costed + bounded.pruned_memory + bounded.pruned_unsized + bounded.pruned_time == bounded.evaluated


def test_offload_step_bound_holds_where_the_cpu_optimizer_is_faster() -> None:
    """Issue 27: on megatron-1t over 4,096 H100 at tp 1, fp8, the host CPU's Adam step beats the GPU's,
    so an offload variant can be faster than its layout without offload; the bound leaves out the
    optimizer step (and the transfers) and holds for every choice."""
    question = TrainQuestion(load_model("megatron-1t"), load_system("dgx-h100"), 4096, 4096, 2048)
    ctx = training_context(question.model, question.system)
    layout = ParallelLayout(tensor_parallel=1, pipeline_parallel=16, data_parallel=256, micro_batch_size=16,
                            zero_stage=2, recompute=Recompute.FULL, dtype="fp8")
    base = ctx.estimate(layout, question.global_batch, question.seq_len)
    choices = offload_choices(question.system)
    variants = [ctx.estimate(layout, question.global_batch, question.seq_len, c) for c in choices]
    assert min(v.step_time_s for v in variants) < base.step_time_s  # a bound on the whole step would be wrong here
    assert all(v.step_time_s >= offload_step_bound(base.time) for v in variants)


@pytest.mark.parametrize(
    ("model", "system", "gpus", "batch", "seq"),
    [("llama3-70b", "dgx-a100", 8, 16, 4096), ("gpt3-175b", "dgx-a100", 64, 64, 2048)],
)
def test_offload_search_counters_mean_what_they_say(model, system, gpus, batch, seq) -> None:
    """Issue 27: with the bounds on offload variants, a time-pruned layout that does not fit by
    itself may have its offload choices left unsized; ``feasible`` counts the layouts found to fit
    among those sized and ``offload_unsized`` the others, so the layouts that fit (the search that
    sizes every choice) lie between ``feasible`` and ``feasible + offload_unsized``."""
    question = TrainQuestion(load_model(model), load_system(system), gpus, batch, seq)
    choices = offload_choices(question.system)
    bounded = search_train(question, settings=PlanSettings(top=8, offload=choices))
    full = search_train(question, settings=PlanSettings(top=8, offload=choices, bound_offload=False))
    without = search_train(question, settings=PlanSettings(top=8))
    for search in (bounded, full, without):
        assert search.costed + search.pruned_memory + search.pruned_unsized + search.pruned_time == search.evaluated
        assert search.feasible + search.offload_unsized == search.costed + search.pruned_time
    assert full.offload_unsized == 0 and without.offload_unsized == 0
    assert bounded.feasible <= full.feasible <= bounded.feasible + bounded.offload_unsized
    assert bounded.evaluated == full.evaluated == without.evaluated
    if (model, gpus) == ("llama3-70b", 8):  # TIGHT, by brute force: layouts that fit alone or with a choice
        assert full.feasible == len({layout_key(e.layout) for e in _variants(TIGHT, every=False)})

