"""Refine the best training plans with a higher fidelity (layer L8).

The analytic ranking is re-checked by running the first K plans through the event-driven engine
(:func:`fabricsim.engine.training.simulate.simulate_training`, fidelity ``simulate``: the op graph
of the step with 1F1B/interleaved scheduling and overlapped gradient buckets, collectives timed
by the analytic collective model, or on a fabric: every collective as flows on the placed topology,
:mod:`fabricsim.engine.fabric_loop`). The refined plans are re-ranked among themselves by their
simulated figures; the rest keep their analytic order after them. Cost: proportional to the
simulated ops (about 10 s for one megatron-1t layout on 3,072 GPUs, milliseconds for small models).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from fabricsim.engine.training.simulate import TrainingCase, simulate_training, step_breakdown
from fabricsim.errors import FabricsimError
from fabricsim.planner.explain import PlanFigures
from fabricsim.planner.train import (
    TrainObjective,
    TrainPlan,
    TrainQuestion,
    TrainSearch,
    explain_plans,
    figures_score,
    plan_key,
)
from fabricsim.workload.training import TrainingOptions

if TYPE_CHECKING:
    from fabricsim.engine.fabric_loop import OnFabric


def _no_network(run: int | None) -> None:
    """Timer factory that keeps every collective's analytic time (no network model)."""
    return None


def refine_plan(question: TrainQuestion, plan: TrainPlan, on_fabric: OnFabric | None = None) -> TrainPlan:
    """``plan`` with its figures from one simulated step (no variability), on ``on_fabric`` when
    given (every collective on the placed fabric, :mod:`fabricsim.engine.fabric_loop`); an offloaded
    plan keeps its analytic figures (the event-driven engine does not model offload transfers)."""
    if plan.estimate.tier is not None:
        return plan
    case = TrainingCase(
        question.model, question.system, plan.estimate.layout, question.global_batch, question.seq_len,
        question.options or TrainingOptions(),
    )
    sim = simulate_training(case, _no_network, None, on_fabric)
    figures = PlanFigures(step_breakdown(sim), sim.step_time_s, plan.estimate.memory.total)
    return replace(plan, figures=figures, simulation=sim)


def refine_search(
    question: TrainQuestion,
    search: TrainSearch,
    count: int,
    objective: TrainObjective,
    on_fabric: OnFabric | None = None,
) -> TrainSearch:
    """``search`` with its first ``count`` plans simulated (on ``on_fabric`` when given) and re-ranked
    (``count`` 0: unchanged)."""
    if count < 0:
        raise FabricsimError("refine", f"must be 0 or more, got {count}")
    if count == 0 or not search.plans:
        return search
    refined = [refine_plan(question, plan, on_fabric) for plan in search.plans[:count]]
    refined.sort(key=lambda p: (figures_score(objective, p.figures), plan_key(p.estimate)))
    rest = [replace(p, reasons=()) for p in search.plans[count:]]
    return replace(search, plans=explain_plans(refined + rest))
