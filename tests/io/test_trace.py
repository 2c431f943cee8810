"""Chrome/Perfetto trace JSON: valid, named tracks, properly nested events, atomic write."""

import json
from collections import defaultdict

import pytest

from fabricsim import api
from fabricsim.engine.simulate import simulate
from fabricsim.errors import FabricsimError
from fabricsim.io.trace import trace_document, write_trace
from fabricsim.workload.graph import CommPayload, Op, OpGraph, RankClass, Stream


def _small_graph() -> OpGraph:
    """Two pipeline stages, two micro-batches, a TP all-reduce per op and DP buckets at the end."""
    g = OpGraph(folded={"data_parallel_replicas": 4})
    ranks = [g.add_rank(RankClass(f"stage{s}", members=4, copies=4)) for s in range(2)]
    tp = CommPayload("all-reduce", 1 << 20, 4)
    dp = CommPayload("all-reduce", 1 << 26, 4, group_stride=8, link_class="scale-out")
    for mb in range(2):
        prev = None
        for r in ranks:
            deps = () if prev is None else (prev,)
            f = g.add(Op(f"F{mb}", r, Stream.COMPUTE, "forward", 1e-3, deps=deps))
            prev = g.add(Op(f"tp{mb}", r, Stream.TP_COMM, "tp-all-reduce", payload=tp, deps=(f,)))
    for r in ranks:
        g.add(Op("dp-bucket", r, Stream.DP_COMM, "dp-all-reduce", payload=dp, deps=(prev,)))
    return g


def _timer(p: CommPayload) -> float:
    return 1e-6 + p.size_bytes / 100e9


def _check_document(doc: dict, g: OpGraph) -> None:
    """Valid trace events: every op once, named tracks, events on a track disjoint or nested."""
    events = doc["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert len([e for e in complete if e["pid"] <= len(g.ranks)]) == len(g.ops)
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    tracks: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in complete:
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert {"name", "cat", "pid", "tid", "ts", "dur"} <= e.keys()
        tracks[(e["pid"], e["tid"])].append(e)
    assert set(tracks) <= named
    assert any(e["tid"] >= 0 and e["pid"] == len(g.ranks) + 1 for e in complete)  # fabric track used
    for track in tracks.values():
        stack: list[float] = []
        for e in sorted(track, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1] <= e["ts"] + 1e-9:
                stack.pop()
            end = e["ts"] + e["dur"]
            assert not stack or end <= stack[-1] + 1e-9, "events on one track overlap without nesting"
            stack.append(end)


def test_trace_is_valid_json_with_named_nested_tracks(tmp_path):
    g = _small_graph()
    result = simulate(g, _timer)
    path = tmp_path / "trace.json"
    write_trace(path, g, result.timeline, result.comm)
    doc = json.loads(path.read_text())
    _check_document(doc, g)
    assert doc["otherData"]["folded"] == {"data_parallel_replicas": 4}
    assert "dp-all-reduce" in doc["otherData"]["comm_exposed_s"]


def test_trace_of_a_simulated_training_step_nests(tmp_path):
    """A real (small) training step: 8 stages, TP-8 reduce-scatter/all-gather, DP buckets."""
    result = api.simulate_train("gpt3-175b", "dgx-a100", 128, 32, 2048, tp=8, pp=8)
    sim = result.simulation
    path = tmp_path / "step.json"
    write_trace(path, sim.graph, sim.result.timeline, sim.result.comm)
    doc = json.loads(path.read_text())
    _check_document(doc, sim.graph)
    assert set(doc["otherData"]["comm_exposed_s"]) == set(dict(result.exposed_comm_s))


def test_trace_is_deterministic():
    g = _small_graph()
    result = simulate(g, _timer)
    assert json.dumps(trace_document(g, result.timeline)) == json.dumps(trace_document(g, result.timeline))


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    g = _small_graph()
    result = simulate(g, _timer)
    target = tmp_path / "trace.json"

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("fabricsim.textfile.os.replace", boom)
    with pytest.raises(FabricsimError, match="trace: cannot write"):
        write_trace(target, g, result.timeline)
    assert list(tmp_path.iterdir()) == []
