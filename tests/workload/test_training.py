"""Layout checks, defaults and message sizes of a training step."""

import pytest

from fabricsim.catalog import load_model
from fabricsim.errors import FabricsimError
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.transformer.flops import model_dims
from fabricsim.workload.training import (
    PipelineSplit,
    check_layout,
    comm_sizes,
    largest_stage,
    last_stage_layers,
    resolve_layout,
)

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


def test_no_gpu_count_checks_no_product() -> None:
    """gpus None (the analytic engine's call): the layout's own GPU count, so no product to check;
    every other rule still applies."""
    layout = ParallelLayout(tensor_parallel=8, data_parallel=2)
    with pytest.raises(FabricsimError) as info:
        check_layout(GPT3, layout, 8, 16, 2048)
    assert info.value.field == "layout"
    assert check_layout(GPT3, layout, None, 16, 2048) == 8
    with pytest.raises(FabricsimError) as info:
        check_layout(GPT3, layout, None, 15, 2048)
    assert info.value.field == "global-batch"


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


LLAMA_405B = model_dims(load_model("llama3-405b"))  # 126 layers


def test_pipeline_split_accounting_counts_the_embedding_and_loss_as_layers() -> None:
    """Megatron-Core's --account-for-{embedding,loss}-in-pipeline-split: 126 layers + 2 = 128 units in
    pp x vpp = 16 x 8 chunks of one: the first chunk holds only the embedding, the last only the loss,
    so a middle stage has 8 layers, the first and the last 7. Without accounting 128 chunks exceed the
    126 layers; with it the units must divide evenly."""
    both = PipelineSplit(True, True)
    layout = ParallelLayout(tensor_parallel=4, pipeline_parallel=16, virtual_stages=8, data_parallel=4)
    with pytest.raises(FabricsimError, match="exceeds the 126 layers"):
        check_layout(LLAMA_405B, layout, 256, 64, 8192)
    assert check_layout(LLAMA_405B, layout, 256, 64, 8192, both) == 16
    assert largest_stage(LLAMA_405B, 16, both).layers == 8
    assert last_stage_layers(LLAMA_405B, 16, both) == 7 and last_stage_layers(LLAMA_405B, 16) == 7
    # pp 2: (126 + 2)/2 = 64 units per stage, 63 layers on each
    assert largest_stage(LLAMA_405B, 2, both).layers == last_stage_layers(LLAMA_405B, 2, both) == 63
    assert largest_stage(LLAMA_405B, 1, both).layers == 126
    with pytest.raises(FabricsimError, match="equal chunks"):  # 127 units over 16 chunks
        layout = ParallelLayout(pipeline_parallel=16, data_parallel=1)
        check_layout(LLAMA_405B, layout, 16, 8, 8192, PipelineSplit(embedding=True))
