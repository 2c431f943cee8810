"""The stage entry's memory side and the layers-only work bound (issue 27 speed work).

The planner sizes a block from ``stage_memory`` and rejects it by ``body_work`` before the stage's
work is computed; both must agree with the full ``stage`` entry, and the search must come out the
same as with the stage's bound alone.
"""

import dataclasses

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.planner import PlanSettings, TrainQuestion, offload_choices, search_train
from fabricsim.planner import space as sp
from fabricsim.planner import train as planner_train
from fabricsim.planner.train import train_problem
from fabricsim.workload.training import TrainingOptions

CASES = [
    ("megatron-1t", "dgx-a100", 3072, 3072, 2048, TrainingOptions()),
    ("deepseek-v3", "dgx-h100", 1024, 4096, 4096, TrainingOptions(mtp_layers=1, a2a_overlap=True)),
    ("llama3-70b", "dgx-h100", 64, 64, 8192, TrainingOptions(account_for_loss=True)),
]


def _layouts(model: str, system: str, gpus: int, batch: int, seq: int, limit: int = 400):
    question = TrainQuestion(load_model(model), load_system(system), gpus, batch, seq)
    problem, space = train_problem(question), sp.TrainSpace()
    out = []
    for group in sp.train_groups(problem, space):
        for mb in sp.micro_batches(problem, space, group)[:3]:
            out.append(group.layout(mb, sp.zero_options(space, group)[0], 1))
    return out[:: max(1, len(out) // limit)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_memory_side_and_layer_work_agree_with_the_stage(case) -> None:
    model, system, gpus, batch, seq, options = case
    ctx = training_context(load_model(model), load_system(system), options)
    layouts = _layouts(model, system, gpus, batch, seq)
    assert len(layouts) > 50
    below = 0
    for layout in layouts:
        memory = ctx.stage_memory(layout, seq)
        entry = ctx.stage(layout, seq)
        for field in dataclasses.fields(memory):
            assert getattr(memory, field.name) == getattr(entry, field.name), field.name
        body, work = ctx.body_work(layout, seq), entry.work
        for field in dataclasses.fields(work):
            assert getattr(body, field.name) <= getattr(work, field.name), field.name
        below += body.forward_s < work.forward_s
    assert below  # the bound leaves out the output layer somewhere (it is a bound, not a copy)


def test_search_is_the_same_without_the_layer_work_bound(monkeypatch) -> None:
    question = TrainQuestion(load_model("llama3-70b"), load_system("dgx-a100"), 64, 256, 4096)
    settings = PlanSettings(top=5, offload=offload_choices(question.system))
    with_bound = search_train(question, settings=settings)
    stage_bound = planner_train._lower_bound_s
    monkeypatch.setattr(planner_train, "_lower_bound_s", lambda walk, layout, body=False: stage_bound(walk, layout))
    without = search_train(question, settings=settings)
    assert with_bound == without
    assert with_bound.pruned_time > 0 and with_bound.plans


def test_the_memory_side_carries_every_sizing_field_of_the_entry() -> None:
    """A field added to StageEntry for sizing (say an adapter's parameters) must be added to
    StageMemory too: the planner sizes layouts from StageMemory alone."""
    from fabricsim.engine.training.results import StageEntry, StageMemory

    entry = {field.name for field in dataclasses.fields(StageEntry)} - {"work", "p2p_bytes"}
    assert entry == {field.name for field in dataclasses.fields(StageMemory)}
