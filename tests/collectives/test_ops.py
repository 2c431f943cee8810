"""Op and algorithm names, parsing and nccl-tests bus factors."""

import pytest

from fabricsim.collectives import Algorithm, CollectiveOp, bus_factor, parse_algorithm, parse_op
from fabricsim.errors import FabricsimError


def test_enum_values_are_the_cli_contract():
    assert [o.value for o in CollectiveOp] == [
        "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce", "send-recv",
    ]
    assert [a.value for a in Algorithm] == [
        "auto", "ring", "tree", "halving-doubling", "nvls", "sharp", "hierarchical", "direct",
        "mesh", "torus",  # issue 25
    ]
    assert isinstance(CollectiveOp.ALL_REDUCE, str)


@pytest.mark.parametrize("text", ["all-reduce", "ALL-REDUCE", " allreduce ", "all_reduce", CollectiveOp.ALL_REDUCE])
def test_parse_op_accepts_spellings(text):
    assert parse_op(text) is CollectiveOp.ALL_REDUCE


def test_parse_op_unknown_suggests_close_names():
    with pytest.raises(FabricsimError) as info:
        parse_op("all-reduse")
    assert info.value.field == "op"
    assert "all-reduce" in str(info.value)


def test_parse_algorithm():
    assert parse_algorithm("NVLS") is Algorithm.NVLS
    with pytest.raises(FabricsimError) as info:
        parse_algorithm("rings")
    assert info.value.field == "algorithm"
    assert "ring" in str(info.value)


@pytest.mark.parametrize(
    ("op", "n", "factor"),
    [
        (CollectiveOp.ALL_REDUCE, 8, 1.75),
        (CollectiveOp.ALL_GATHER, 8, 0.875),
        (CollectiveOp.REDUCE_SCATTER, 4, 0.75),
        (CollectiveOp.ALL_TO_ALL, 2, 0.5),
        (CollectiveOp.BROADCAST, 8, 1.0),
        (CollectiveOp.REDUCE, 8, 1.0),
        (CollectiveOp.SEND_RECV, 8, 1.0),
        (CollectiveOp.ALL_REDUCE, 1, 0.0),
        (CollectiveOp.BROADCAST, 1, 0.0),
    ],
)
def test_bus_factor_matches_nccl_tests(op, n, factor):
    assert bus_factor(op, n) == pytest.approx(factor)
