"""Megatron-Core's custom pipeline layouts (``--pipeline-model-parallel-layout``)."""

import pytest

from fabricsim import api
from fabricsim.catalog import load_model
from fabricsim.errors import FabricsimError
from fabricsim.specs import ParallelLayout
from fabricsim.transformer.flops import model_dims
from fabricsim.workload.pipeline_layout import parse_layout, rank_layers
from fabricsim.workload.training import PipelineSplit, check_layout, largest_stage, last_stage_layers

DSV3 = model_dims(load_model("deepseek-v3"))
NVIDIA_H100 = "Et|(tt|)*30mL"  # Megatron-Bridge's DeepSeek-V3 layout on H100 (pp 8 x vpp 4)


def test_parse_unrolls_like_megatron() -> None:
    """Megatron-Core parse_str_to_list's own docstring example, and commas are cosmetic."""
    assert parse_layout("Ettt|(tt|)*29,m|L") == ("Ettt", *("tt",) * 29, "m", "L")
    assert parse_layout("E|t*3|L") == ("E", "ttt", "L")


def test_chunks_go_round_robin_over_the_ranks() -> None:
    """Chunk i runs on rank i mod pp: rank 0 holds E + 7 layers, rank 7 six layers + MTP + loss."""
    chunks = parse_layout(NVIDIA_H100)
    assert len(chunks) == 32 and rank_layers(chunks, 8) == (7, 8, 8, 8, 8, 8, 8, 6)
    split = PipelineSplit(chunks=chunks)
    assert largest_stage(DSV3, 8, split).layers == 8 and last_stage_layers(DSV3, 8, split) == 6
    assert last_stage_layers(DSV3, 8) == 7  # equal chunks: 61 = 8 x 8 - 3, the last stage one short


@pytest.mark.parametrize(
    ("text", "vpp", "mtp", "message"),
    [
        (NVIDIA_H100, 2, 1, "pp x vpp"),
        (NVIDIA_H100, 4, 0, "MTP"),
        ("Et|(tt|)*29,ttt|mL", 4, 1, "transformer layers"),
        ("tE|(tt|)*30mL", 4, 1, "embedding"),
        ("Et|(tt|)*29,m|ttL", 4, 1, "follows an MTP"),
        ("Et|(tt|)*29,tL|tm", 4, 1, "loss"),
    ],
)
def test_layouts_megatron_refuses_are_refused(text: str, vpp: int, mtp: int, message: str) -> None:
    layout = ParallelLayout(tensor_parallel=2, pipeline_parallel=8, virtual_stages=vpp, data_parallel=64,
                            expert_parallel=64)
    with pytest.raises(FabricsimError, match=message):
        check_layout(DSV3, layout, 1024, 8192, 4096, PipelineSplit(chunks=parse_layout(text)), mtp)


def test_the_layout_shortens_the_mtp_stage_and_the_planner_keeps_its_chunks() -> None:
    """NVIDIA's layout moves a layer off the last stage (MTP + loss there): the step gets shorter,
    memory (paced by the fullest stage, 8 layers either way) stays; the planner searches only the
    pp x vpp the layout has chunks for."""
    args = ("deepseek-v3", "dgx-h100", 1024, 8192, 4096)
    layout = {"tp": 2, "pp": 8, "vpp": 4, "ep": 64, "expert_tp": 1, "mtp_layers": 1, "recompute": "fine-grained"}
    equal = api.train(*args, **layout)
    placed = api.train(*args, **layout, pipeline_layout=NVIDIA_H100)
    assert placed.step_time_s < equal.step_time_s
    assert placed.memory_per_gpu_bytes == equal.memory_per_gpu_bytes
    assert dict(placed.options)["pipeline_layout"] == NVIDIA_H100
    with pytest.raises(FabricsimError, match="pipeline-layout"):
        api.train(*args, **layout, pipeline_layout=NVIDIA_H100, account_for_embedding_in_pipeline_split=True)
    constraints = {"tp": 2, "ep": 64, "expert_tp": 1, "recompute": "fine-grained", "micro_batch": 1}
    plan = api.plan_train(*args, top=3, constraints=constraints, mtp_layers=1, pipeline_layout=NVIDIA_H100)
    for entry in plan.plans:
        shape = dict(entry.result.layout)
        assert shape["pp"] * shape["vpp"] == 32
