"""Planner search space: divisibility rules, canonical order, constraints, errors."""

import pytest

from fabricsim import api
from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import check_layout
from fabricsim.errors import FabricsimError
from fabricsim.planner import space as sp
from fabricsim.planner.space import TrainProblem, TrainSpace, train_space
from fabricsim.specs import Recompute
from fabricsim.transformer.flops import model_dims

GPT3 = model_dims(load_model("gpt3-175b"))
MIXTRAL = model_dims(load_model("mixtral-8x22b"))
A100, H100 = load_system("dgx-a100"), load_system("dgx-h100")


def _layouts(problem: TrainProblem, space: TrainSpace):
    for group in sp.train_groups(problem, space):
        for mb in sp.micro_batches(problem, space, group):
            m = problem.global_batch // (group.data_parallel * mb)
            for zero in sp.zero_options(space, group):
                for vpp in sp.virtual_options(problem, space, group, m):
                    yield group.layout(mb, zero, vpp)


def test_divisors() -> None:
    assert sp.divisors(1) == (1,)
    assert sp.divisors(12) == (1, 2, 3, 4, 6, 12)
    assert sp.divisors(3072)[-1] == 3072 and len(sp.divisors(3072)) == 22


def test_every_enumerated_layout_is_valid_and_unique() -> None:
    problem = TrainProblem(MIXTRAL, H100, 32, 64, 4096)
    layouts = list(_layouts(problem, TrainSpace()))
    assert len(layouts) > 1000
    assert len(set(layouts)) == len(layouts)
    for layout in layouts:
        assert check_layout(MIXTRAL, layout, 64, 4096) >= 1  # raises if invalid
        assert layout.sequence_parallel is False or layout.tensor_parallel > 1
        assert layout.zero_stage == 0 or layout.data_context_parallel > 1
        if layout.virtual_stages > 1:
            assert MIXTRAL.layers % (layout.pipeline_parallel * layout.virtual_stages) == 0
    assert {layout.expert_parallel for layout in layouts} >= {1, 2, 8}


def test_dense_model_has_no_expert_parallelism_and_fp8_only_where_native() -> None:
    problem = TrainProblem(GPT3, A100, 64, 128, 2048)
    layouts = list(_layouts(problem, TrainSpace()))
    assert {layout.expert_parallel for layout in layouts} == {1}
    assert {layout.dtype for layout in layouts} == {"bf16"}  # A100 has no FP8 tensor cores
    assert sp.default_dtypes(H100) == ("bf16", "fp8")


def test_constraints_narrow_the_space() -> None:
    problem = TrainProblem(GPT3, A100, 64, 128, 2048)
    space = train_space({"tp": [8], "pp": 4, "recompute": "full", "zero": [1, 2], "sequence_parallel": True})
    layouts = list(_layouts(problem, space))
    assert layouts
    assert all(layout.tensor_parallel == 8 and layout.pipeline_parallel == 4 for layout in layouts)
    assert {layout.recompute for layout in layouts} == {Recompute.FULL}
    assert {layout.zero_stage for layout in layouts} == {1, 2}
    single = list(_layouts(problem, train_space({"tp": 8, "pp": 8, "zero": [1, 2]})))  # dp = 1: one stage
    assert single and {layout.zero_stage for layout in single} == {1}


def test_groups_are_in_canonical_order() -> None:
    problem = TrainProblem(GPT3, A100, 64, 128, 2048)
    first = [g for g in sp.train_groups(problem, TrainSpace())]
    assert first == list(sp.train_groups(problem, TrainSpace()))
    degrees = [(g.tensor_parallel, g.pipeline_parallel) for g in first]
    assert degrees == sorted(degrees)


@pytest.mark.parametrize(
    ("constraints", "field"),
    [
        ({"tp": 0}, "tp"),
        ({"pp": "x"}, "pp"),
        ({"zero": 4}, "zero"),
        ({"recompute": "sometimes"}, "recompute"),
        ({"dtype": "int3"}, "dtype"),
        ({"colour": 1}, "colour"),
    ],
)
def test_bad_constraints_name_the_field(constraints: dict, field: str) -> None:
    """Constraints are typed once, at the API edge (TrainConstraints); the planner trusts them."""
    with pytest.raises(FabricsimError) as error:
        api.plan_train("llama3-8b", "dgx-h100", 8, 16, 2048, constraints=constraints)
    assert field in error.value.field


def test_impossible_constraints_are_errors() -> None:
    problem = TrainProblem(GPT3, A100, 64, 128, 2048)
    with pytest.raises(FabricsimError, match="tp"):
        sp.check_space(problem, train_space({"tp": 7}))
    with pytest.raises(FabricsimError, match="layout"):
        sp.check_space(problem, train_space({"tp": 8, "pp": 16}))  # tp*pp = 128 > 64 GPUs
    with pytest.raises(FabricsimError, match="layout"):
        sp.check_space(TrainProblem(GPT3, A100, 64, 3, 2048), train_space({"tp": 8, "pp": 1, "cp": 1}))  # dp=8 vs 3


def test_pipeline_split_accounting_changes_which_stages_and_chunks_are_valid() -> None:
    """With the embedding counted as a layer, Llama 3 70B splits 80 + 1 = 81 units: pp must divide 81
    and pp x vpp too (Megatron-Core's rule), and every plan is a layout the engine accepts."""
    from fabricsim import api

    result = api.plan_train("llama3-70b", "dgx-h100", 24, 48, 4096, top=5, account_for_embedding_in_pipeline_split=True)
    assert result.plans
    for plan in result.plans:
        layout = dict(plan.result.layout)
        assert 81 % (layout["pp"] * layout["vpp"]) == 0


def test_zero_stages_are_searched_when_context_parallel_ranks_share_the_weights() -> None:
    """ZeRO shards over dp·cp (Megatron-Core's dp_cp group): dp = 1, cp = 2 has four distinct stages."""
    group = sp.Group(1, 1, 2, 1, 1, "bf16", False, Recompute.NONE)
    assert sp.zero_options(TrainSpace(), group) == (3, 2, 1, 0)
    alone = sp.Group(1, 1, 1, 1, 1, "bf16", False, Recompute.NONE)
    assert sp.zero_options(TrainSpace(), alone) == (0,)
