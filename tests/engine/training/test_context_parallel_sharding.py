"""ZeRO and the gradient reduction span the data-parallel group *with* context parallelism (dp x cp).

Megatron-Core builds its distributed optimizer on ``dp_cp_group`` and reduces gradients over it
(``get_data_parallel_group(with_context_parallel=True)``): context-parallel ranks hold the same
weights, so dp=4 x cp=2 shards the model states eight ways, as dp=8 x cp=1 does (issue 27).
"""

from __future__ import annotations

import pytest

from fabricsim import api
from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.engine.training.offload import owned_params, weight_store_bytes
from fabricsim.engine.training.simulate import TrainingCase, training_plan
from fabricsim.specs import ParallelLayout
from fabricsim.transformer.flops import model_dims
from fabricsim.transformer.memory import WEIGHT_BYTES, optimizer_state_bytes
from fabricsim.workload.training import TrainingOptions, comm_sizes

RUN = ("llama3.1-8b", "dgx-h100", 8, 128, 8192)


def _train(zero: int, dp: int, cp: int) -> dict:
    return api.train(*RUN, zero=zero, dp=dp, cp=cp).to_json()


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_dp4_cp2_shards_model_states_as_dp8(zero: int) -> None:
    """The issue's reproducer: --dp 4 --cp 2 --zero 1 gave twice the optimizer state of --dp 8."""
    folded, plain = _train(zero, 4, 2), _train(zero, 8, 1)
    for kind in ("weights", "gradients", "optimizer_states"):
        assert folded["memory_breakdown_bytes"][kind] == plain["memory_breakdown_bytes"][kind]
    assert folded["time_breakdown_s"]["optimizer_s"] == plain["time_breakdown_s"]["optimizer_s"]
    params = api.train(*RUN, zero=0, dp=8).to_json()["memory_breakdown_bytes"]["weights"] / WEIGHT_BYTES
    assert folded["memory_breakdown_bytes"]["optimizer_states"] == pytest.approx(
        params * optimizer_state_bytes(4.0) / 8, rel=1e-12
    )


def test_context_parallel_ranks_reduce_their_gradients() -> None:
    """dp=1 x cp=8: the eight ranks hold one model's weights and all-reduce its gradients."""
    out = api.train(*RUN, dp=1, cp=8).to_json()
    assert out["time_breakdown_s"]["dp_comm_s"] > 0.0
    dims = model_dims(load_model(RUN[0]))
    sizes = comm_sizes(dims, ParallelLayout(context_parallel=8), 8192, (1e9, 0.0, 4.0))
    assert sizes.dense_grad_bytes == 4e9


def test_the_reduction_is_the_dp8_one_over_the_same_ranks() -> None:
    """dp·cp ranks with stride tp: the same eight GPUs reduce the same bytes as dp=8."""
    assert _train(1, 4, 2)["time_breakdown_s"]["dp_comm_s"] == _train(1, 8, 1)["time_breakdown_s"]["dp_comm_s"]


@pytest.mark.parametrize("zero", [1, 3])
def test_offload_shards_as_the_memory_model(zero: int) -> None:
    """Offload sizes (optimizer shard, ZeRO-3 weight store) follow the same dp·cp and expert rules."""
    ctx = training_context(load_model("deepseek-v3"), load_system("dgx-h100"))
    layout = ParallelLayout(tensor_parallel=2, pipeline_parallel=8, data_parallel=4, context_parallel=2,
                            expert_parallel=2, zero_stage=zero)
    entry = ctx.stage(layout, 4096)
    memory = ctx.memory(layout, 512, 4096)
    assert owned_params(layout, entry) * optimizer_state_bytes(4.0) == pytest.approx(memory.optimizer_states)
    if zero == 3:
        gathered = 2.0 * WEIGHT_BYTES * (entry.dense_params + entry.expert_params) / entry.layers
        assert weight_store_bytes(layout, entry) == pytest.approx(memory.weights - gathered)


def test_the_simulated_step_reduces_over_the_context_parallel_ranks() -> None:
    """The event-driven engine issues the same dp·cp gradient buckets as the closed form."""
    model, system = load_model(RUN[0]), load_system(RUN[1])
    case = TrainingCase(model, system, ParallelLayout(context_parallel=8, zero_stage=1), 8, 8192, TrainingOptions())
    plan, _ = training_plan(case)
    assert plan.grad_buckets[0] and plan.param_gather
