"""Op graph container: ranks, ops, dependencies, groups."""

import pytest

from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream


def _two_rank_graph() -> OpGraph:
    g = OpGraph()
    a = g.add_rank(RankClass("stage0", members=8))
    b = g.add_rank(RankClass("stage1", members=8, copies=2))
    f0 = g.add(Op("f0", a, Stream.COMPUTE, "forward", 1.0))
    s0 = g.add(Op("send", a, Stream.PP_SEND, "pp-p2p", 0.1, deps=(f0,), group="p2p0"))
    g.add(Op("recv", b, Stream.PP_RECV, "pp-p2p", 0.1, group="p2p0"))
    g.add(Op("f1", b, Stream.COMPUTE, "forward", 1.0, deps=(s0,)))
    return g


def test_graph_counts_gpus_and_dependents():
    g = _two_rank_graph()
    assert g.gpus_represented == 8 + 16
    assert g.dependents()[0] == [1]
    assert g.groups() == {"p2p0": [1, 2]}


def test_comm_flag_and_payload_is_hashable():
    payload = CommPayload("all-reduce", 1 << 20, 8)
    op = Op("ar", 0, Stream.TP_COMM, "tp-all-reduce", payload=payload)
    assert op.is_comm and {payload: 1}[CommPayload("all-reduce", 1 << 20, 8)] == 1
    assert not Op("c", 0, Stream.COMPUTE, "forward", 1.0).is_comm


@pytest.mark.parametrize(
    "op",
    [
        Op("bad-rank", 5, Stream.COMPUTE, "forward", 1.0),
        Op("future-dep", 0, Stream.COMPUTE, "forward", 1.0, deps=(3,)),
        Op("negative", 0, Stream.COMPUTE, "forward", -1.0),
    ],
)
def test_add_rejects_malformed_ops(op):
    g = OpGraph()
    g.add_rank(RankClass("r"))
    with pytest.raises(ValueError):
        g.add(op)
