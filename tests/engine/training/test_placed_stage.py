"""A stage entry placed on a data-parallel size and ZeRO stage: cached once, scaled per estimate."""

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.engine.training.memory import memory_breakdown, model_state_bytes
from fabricsim.engine.training.step_time import dp_exposed_s, optimizer_s, zero3_exposed_s
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.workload.training import TrainingOptions

H100 = load_system("dgx-h100")
GPT3 = load_model("gpt3-175b")
DSV3 = load_model("deepseek-v3")


def _layout(model: str, **given: object) -> ParallelLayout:
    if model == "dense":
        base = {"tensor_parallel": 8, "pipeline_parallel": 4, "data_parallel": 8, "zero_stage": 3}
    else:
        base = {"tensor_parallel": 2, "pipeline_parallel": 8, "data_parallel": 16, "expert_parallel": 16,
                "expert_tensor_parallel": 1, "zero_stage": 3, "recompute": Recompute.SELECTIVE}
    return ParallelLayout(**{**base, **given})


def test_one_placement_serves_every_virtual_stage_count_and_batch() -> None:
    ctx = training_context(GPT3, H100)
    layout = _layout("dense")
    entry = ctx.stage(layout, 2048)
    placed = ctx.placed_stage(layout, entry)
    assert ctx.placed_stage(_layout("dense", virtual_stages=2), entry) is placed
    assert ctx.placed_stage(_layout("dense", data_parallel=16), entry) is not placed
    assert ctx.placed_stage(_layout("dense", zero_stage=1), entry) is not placed
    # two estimates of the placement, different batches and virtual stages: one cached placement
    ctx.estimate(layout, 256, 2048)
    ctx.estimate(_layout("dense", virtual_stages=2), 512, 2048)
    assert ctx.placed_stage(layout, entry) is placed


@pytest.mark.parametrize(("model", "spec", "options"), [
    ("dense", GPT3, TrainingOptions()),
    ("moe", DSV3, TrainingOptions(overlap_grad_reduce=True, overlap_param_gather=True, a2a_overlap=True)),
])
def test_placement_holds_the_step_functions_figures(model: str, spec, options: TrainingOptions) -> None:
    ctx = training_context(spec, H100, options)
    layout = _layout(model, virtual_stages=2)
    entry = ctx.stage(layout, 4096)
    placed = ctx.placed_stage(layout, entry)
    params = (entry.dense_params, entry.expert_params)
    zero3 = zero3_exposed_s(ctx, layout, entry.work, params)
    assert zero3 > 0.0
    assert (placed.dp_exposed_s, placed.zero3_s, placed.optimizer_s) == (
        dp_exposed_s(ctx, layout, entry.work, entry.trained), zero3, optimizer_s(ctx, layout, entry.trained)
    )
    assert ctx.data_parallel_s(layout, entry) == (placed.dp_exposed_s, placed.zero3_s, placed.optimizer_s)
    stride = layout.tensor_parallel * layout.context_parallel * layout.data_parallel
    assert placed.p2p_s == ctx.comm.send_recv_s(entry.p2p_bytes, stride) > 0.0
    work = entry.work
    unit = work.forward_s + work.backward_s + work.recompute_s + work.tp_comm_s + work.cp_comm_s
    assert placed.bubble_unit_s == unit + (work.ep_comm_s + work.ep_unpaired_s + zero3)
    shards = (layout.zero_stage, layout.data_context_parallel, layout.expert_data_parallel)
    assert placed.states == model_state_bytes(entry, shards)
    # the estimate scales the placement by its micro-batches and virtual stages
    est = ctx.estimate(layout, 512, 4096)
    m, pp, vpp = est.microbatches, layout.pipeline_parallel, layout.virtual_stages
    assert est.time.pp_comm_s == m * (2 * vpp * placed.p2p_s)
    assert est.time.pipeline_bubble_s == (pp - 1) / vpp * placed.bubble_unit_s
    assert est.time.dp_comm_s == m * placed.zero3_s + placed.dp_exposed_s
    assert est.time.optimizer_s == placed.optimizer_s
    assert est.memory[:3] == placed.states


def test_no_pipeline_no_send_recv() -> None:
    ctx = training_context(GPT3, H100)
    layout = _layout("dense", pipeline_parallel=1, data_parallel=32)
    placed = ctx.placed_stage(layout, ctx.stage(layout, 2048))
    assert placed.p2p_s == 0.0 and ctx.estimate(layout, 256, 2048).time.pp_comm_s == 0.0


def test_memory_with_given_states_is_memory_without() -> None:
    ctx = training_context(DSV3, H100)
    layout = _layout("moe")
    entry = ctx.stage(layout, 4096)
    placed = ctx.placed_stage(layout, entry)
    assert memory_breakdown(layout, entry, 32, placed.states) == memory_breakdown(layout, entry, 32)
