"""Layout checks, defaults and message sizes of a training step."""

import pytest

from fabricsim.catalog import load_model
from fabricsim.errors import FabricsimError
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.transformer.flops import model_dims
from fabricsim.workload.training import check_layout, comm_sizes, largest_stage, resolve_layout

GPT3 = model_dims(load_model("gpt3-175b"))
DSV3 = model_dims(load_model("deepseek-v3"))


@pytest.mark.parametrize(
    ("layout", "gpus", "batch", "field"),
    [
        (ParallelLayout(tensor_parallel=5, data_parallel=1), 5, 8, "tp"),
        (ParallelLayout(pipeline_parallel=97, data_parallel=1), 97, 8, "pp"),
        (ParallelLayout(tensor_parallel=8, data_parallel=2), 8, 8, "layout"),
        (ParallelLayout(data_parallel=8, expert_parallel=2), 8, 8, "ep"),
        (ParallelLayout(data_parallel=8, micro_batch_size=2), 8, 24, "global-batch"),
        (ParallelLayout(pipeline_parallel=8, virtual_stages=2, data_parallel=1), 8, 12, "vpp"),
        (ParallelLayout(data_parallel=1, context_parallel=3), 3, 8, "cp"),
        (ParallelLayout(data_parallel=1, dtype="int4"), 1, 8, "dtype"),
    ],
)
def test_bad_layouts_name_the_field(layout: ParallelLayout, gpus: int, batch: int, field: str) -> None:
    with pytest.raises(FabricsimError) as info:
        check_layout(GPT3, layout, gpus, batch, 2048)
    assert info.value.field == field


def test_ep_must_divide_experts() -> None:
    with pytest.raises(FabricsimError) as info:
        check_layout(DSV3, ParallelLayout(data_parallel=72, expert_parallel=72), 72, 72, 4096)
    assert info.value.field == "ep"


def test_microbatches() -> None:
    layout = ParallelLayout(tensor_parallel=8, pipeline_parallel=16, data_parallel=8)
    assert check_layout(GPT3, layout, 1024, 1536, 2048) == 192


def test_defaults() -> None:
    layout = resolve_layout(64, GPT3, tensor_parallel=8)
    assert (layout.data_parallel, layout.zero_stage, layout.sequence_parallel) == (8, 0, True)
    assert layout.recompute is Recompute.NONE
    moe = resolve_layout(64, DSV3, expert_parallel=8, recompute="selective")
    assert moe.zero_stage == 1 and moe.recompute is Recompute.SELECTIVE
    with pytest.raises(FabricsimError):
        resolve_layout(64, GPT3, tensor_parallel=3)


def test_uneven_stages_take_the_ceiling() -> None:
    stage = largest_stage(DSV3, 16)
    assert stage.layers == 4 and stage.moe_layers == 4


def test_comm_sizes_follow_nccl_tests_definitions() -> None:
    layout = ParallelLayout(tensor_parallel=8, pipeline_parallel=2, data_parallel=4, sequence_parallel=True)
    sizes = comm_sizes(GPT3, layout, 2048, (1e9, 0.0, 4.0))
    assert sizes.tensor_bytes == 2 * 2048 * 12288
    assert sizes.pipeline_bytes == 2 * 2048 * 12288 / 8
    assert sizes.dense_grad_bytes == 4e9
    assert sizes.expert_bytes == 0.0
