"""Done-when: a Chakra trace written here (one file per rank, layers of compute and collectives,
a pipeline send/recv) replays, and its step time equals the op graph's critical path."""

from __future__ import annotations

import json
import math

import pytest

from fabricsim.api import replay_chakra
from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.io.chakra import encode_chakra, read_chakra_files
from fabricsim.workload.chakra import ChakraNode, ChakraRank, NodeType, graph_from_chakra

RANKS, LAYERS = 4, 3
ALL_REDUCE, ALL_GATHER = 0, 2
# producers disagree on integer widths: write each attribute with a different one
KINDS = {"comm_type": "int32", "comm_size": "uint64", "num_ops": "int64", "comm_src": "uint32", "comm_dst": "sint64"}


def _rank_nodes(rank: int) -> list[ChakraNode]:
    """Forward: per layer compute -> TP all-reduce; backward: per layer compute, whose gradient
    all-reduce on the DP group overlaps the next layer's backward; rank 0 sends to rank 1 at the end."""
    nodes: list[ChakraNode] = []

    def add(name, kind, deps=(), duration=0, **attrs):
        nodes.append(
            ChakraNode(
                len(nodes) + 1,
                name,
                kind,
                ctrl_deps=tuple(deps[:1]),
                data_deps=tuple(deps[1:]),
                duration_micros=duration,
                attrs=attrs,
            )
        )
        return len(nodes)

    last = add("start", NodeType.METADATA)
    for layer in range(LAYERS):
        comp = add(f"fwd{layer}", NodeType.COMP, (last,), 100 + 17 * rank + 5 * layer, num_ops=10**9)
        last = add(
            f"tp_ar{layer}",
            NodeType.COMM_COLL,
            (comp,),
            40 + 3 * layer,
            comm_type=ALL_REDUCE,
            comm_size=2**24,
            pg_name="tp",
        )
    grads = []
    for layer in reversed(range(LAYERS)):
        last = add(f"bwd{layer}", NodeType.COMP, (last,), 200 + 29 * ((rank + layer) % RANKS), num_ops=2 * 10**9)
        grads.append(
            add(f"dp_ag{layer}", NodeType.COMM_COLL, (last,), 150, comm_type=ALL_GATHER, comm_size=2**26, pg_name="dp")
        )
    if rank == 0:
        add("send", NodeType.COMM_SEND, (last,), 30, comm_dst=1, comm_size=2**20, comm_tag=7)
    if rank == 1:
        recv = add("recv", NodeType.COMM_RECV, (grads[0],), 30, comm_src=0, comm_size=2**20, comm_tag=7)
        add("after_recv", NodeType.COMP, (recv, last), 20, num_ops=10**8)
    return nodes


def _write(tmp_path, gz: bool = False) -> list[str]:
    import gzip

    paths = []
    for rank in range(RANKS):
        data = encode_chakra(ChakraRank(rank, tuple(_rank_nodes(rank)), {"schema": "test"}), KINDS)
        path = tmp_path / f"trace.{rank}.et{'.gz' if gz else ''}"
        path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
        paths.append(str(path))
    return paths[::-1]  # the rank comes from the file name, not the argument order


def critical_path_s(graph, durations) -> float:
    """Independent oracle: longest path over dependencies, stream order and collective meetings
    (a group starts when its last member is ready), by fixed-point iteration over the DAG."""
    ops = graph.ops
    prev = {}
    before = [None] * len(ops)
    for i, op in enumerate(ops):
        before[i] = prev.get((op.rank, op.stream))
        prev[(op.rank, op.stream)] = i
    members = graph.groups()
    end = [0.0] * len(ops)
    for _ in range(len(ops) + 1):
        ready = [
            max([end[d] for d in op.deps] + ([end[before[i]]] if before[i] is not None else []) + [0.0])
            for i, op in enumerate(ops)
        ]
        start = [max(ready[j] for j in members[op.group]) if op.group else ready[i] for i, op in enumerate(ops)]
        new = [s + d for s, d in zip(start, durations, strict=True)]
        if new == end:
            break
        end = new
    return max(end)


def test_trace_round_trips_with_mixed_integer_widths(tmp_path):
    ranks = read_chakra_files(_write(tmp_path))
    assert [r.rank for r in ranks] == list(range(RANKS))
    assert ranks[0].metadata == {"schema": "test"}
    original = {n.id: n for n in _rank_nodes(0)}
    for node in ranks[0].nodes:
        want = original[node.id]
        assert (node.name, node.type, node.duration_micros) == (want.name, want.type, want.duration_micros)
        assert set(node.ctrl_deps) | set(node.data_deps) == set(want.ctrl_deps) | set(want.data_deps)
        assert dict(node.attrs) == dict(want.attrs)


def test_replay_step_time_equals_the_critical_path(tmp_path):
    ranks = read_chakra_files(_write(tmp_path, gz=True))
    result = replay_chakra(ranks)
    graph = graph_from_chakra(ranks)
    durations = [op.duration_s for op in graph.ops]
    expected = critical_path_s(graph, durations)
    assert result.step_time_s == pytest.approx(expected, rel=1e-12)
    assert result.ops == sum(len(_rank_nodes(r)) for r in range(RANKS))
    # the meetings matter: the slowest rank's chain alone is shorter than the synchronised step
    slowest_alone = max(sum(n.duration_micros for n in _rank_nodes(r)) * 1e-6 for r in range(RANKS))
    assert result.step_time_s > slowest_alone * 0.5
    assert not math.isclose(result.step_time_s, slowest_alone)
    assert set(result.comm_busy_s) == {"all-reduce", "all-gather", "send", "recv"}
    assert result.exposed_comm_s["all-gather"] < result.comm_busy_s["all-gather"]  # DP overlaps backward


def test_replay_cli_with_system_times_missing_durations(tmp_path, capsys):
    paths = _write(tmp_path)
    assert main(["replay", *paths, "--json", "--trace", str(tmp_path / "t.json")]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert measured["ranks"] == RANKS and measured["step_time_s"] > 0
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    stripped = []
    for rank in range(RANKS):
        nodes = tuple(ChakraNode(n.id, n.name, n.type, n.ctrl_deps, n.data_deps, 0, n.attrs) for n in _rank_nodes(rank))
        path = tmp_path / f"bare.{rank}.et"
        path.write_bytes(encode_chakra(ChakraRank(rank, nodes)))
        stripped.append(str(path))
    assert main(["replay", *stripped, "--json"]) == 2
    assert "no duration_micros" in capsys.readouterr().err
    assert main(["replay", *stripped, "--system", "dgx-h100", "--json"]) == 0
    modelled = json.loads(capsys.readouterr().out)
    assert modelled["system"] == "dgx-h100" and modelled["step_time_s"] > 0


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ((ChakraNode(1, "a", NodeType.COMP, (2,), (), 5), ChakraNode(2, "b", NodeType.COMP, (1,), (), 5)), "cycle"),
        ((ChakraNode(1, "a", NodeType.COMP, (9,), (), 5),), "unknown node"),
        ((ChakraNode(1, "c", NodeType.COMM_COLL, (), (), 5, {"comm_type": 42, "comm_size": 8}),), "comm_type"),
        ((ChakraNode(1, "c", NodeType.COMM_COLL, (), (), 5, {"comm_type": 0}),), "comm_size"),
    ],
)
def test_bad_traces_are_one_line_errors(nodes, message):
    with pytest.raises(FabricsimError, match=message):
        graph_from_chakra([ChakraRank(0, nodes), ChakraRank(1, ())])


def test_truncated_file_is_an_error(tmp_path):
    path = tmp_path / "x.0.et"
    path.write_bytes(encode_chakra(ChakraRank(0, tuple(_rank_nodes(0))))[:-3])
    with pytest.raises(FabricsimError, match="malformed"):
        read_chakra_files([str(path)])
