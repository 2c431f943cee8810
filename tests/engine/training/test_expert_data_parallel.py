"""Expert gradients are reduced over the expert-data-parallel group even when dp x cp = 1: with
Megatron-Core's parallel folding, tp 8 x ep 2 x expert-tp 1 leaves every expert on 8 / 2 = 4 ranks
of the tensor-parallel group, whose expert gradients must be all-reduced (or reduce-scattered)."""

from __future__ import annotations

from fabricsim import api
from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.simulate import TrainingCase, training_plan
from fabricsim.specs import ParallelLayout
from fabricsim.workload.training import TrainingOptions

RUN = ("mixtral-8x22b", "dgx-h100", 8, 8, 4096)


def test_expert_replicas_reduce_their_gradients_without_data_parallelism() -> None:
    layout = ParallelLayout(tensor_parallel=8, expert_parallel=2, expert_tensor_parallel=1)
    assert layout.data_context_parallel == 1 and layout.expert_data_parallel == 4
    out = api.train(*RUN, tp=8, ep=2, expert_tp=1, dp=1).to_json()
    assert out["time_breakdown_s"]["dp_comm_s"] > 0.0
    case = TrainingCase(load_model(RUN[0]), load_system(RUN[1]), layout, 8, 4096, TrainingOptions())
    plan, _ = training_plan(case)
    assert plan.grad_buckets[0]  # the event-driven engine issues them too


def test_without_expert_replicas_nothing_is_reduced() -> None:
    out = api.train(*RUN, tp=8, ep=8, expert_tp=1, dp=1).to_json()
    assert out["time_breakdown_s"]["dp_comm_s"] == 0.0
