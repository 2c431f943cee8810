"""Chrome / Perfetto trace JSON of a simulated iteration (layer L10).

Format: the Trace Event Format's JSON object form (``{"traceEvents": [...]}``), which
ui.perfetto.dev and chrome://tracing open directly. Every rank class of the op graph is a process
(``pid``) with one thread (``tid``) per stream; each op is a complete event (``"ph": "X"``) with
``ts``/``dur`` in microseconds. A last process, ``fabric``, has one track per link class
(``scale-up``, ``scale-out``) showing which transfers occupy it; transfers that overlap in time go
to numbered lanes of that link class so that events on one track never partially overlap.
Times are rounded to whole nanoseconds on both ends, so consecutive ops on a track never overlap
through rounding. ``otherData`` carries the exposed-communication summary per category.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabricsim.engine.simulate import CommSummary, Timeline
from fabricsim.io.results import write_atomic
from fabricsim.workload.graph import OpGraph, Stream

_STREAM_ORDER = {stream: k for k, stream in enumerate(Stream)}


def _ns(t_s: float) -> int:
    return round(t_s * 1e9)


def _meta(kind: str, pid: int, tid: int, name: str) -> dict[str, Any]:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {"name": name}}


def _complete(name: str, cat: str, pid: int, tid: int, span_ns: tuple[int, int]) -> dict[str, Any]:
    start_ns, end_ns = span_ns
    return {
        "ph": "X",
        "name": name,
        "cat": cat,
        "pid": pid,
        "tid": tid,
        "ts": start_ns / 1e3,
        "dur": (end_ns - start_ns) / 1e3,
    }


def _rank_label(graph: OpGraph, r: int) -> str:
    rank = graph.ranks[r]
    label = f"{rank.name} ({rank.members} GPU{'s' if rank.members > 1 else ''} in lock-step"
    return label + (f", x{rank.copies} folded)" if rank.copies > 1 else ")")


def _gpu_events(graph: OpGraph, timeline: Timeline) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    used: set[tuple[int, Stream]] = set()
    for i, op in enumerate(graph.ops):
        used.add((op.rank, op.stream))
        span = (_ns(timeline.start_s[i]), _ns(timeline.end_s[i]))
        events.append(_complete(op.name, op.category, op.rank + 1, _STREAM_ORDER[op.stream], span))
    meta = [_meta("process_name", r + 1, 0, _rank_label(graph, r)) for r in range(len(graph.ranks))]
    meta += [_meta("process_sort_index", r + 1, 0, str(r)) for r in range(len(graph.ranks))]
    for rank, stream in sorted(used, key=lambda key: (key[0], _STREAM_ORDER[key[1]])):
        meta.append(_meta("thread_name", rank + 1, _STREAM_ORDER[stream], stream.value))
    return meta + events


def _fabric_events(graph: OpGraph, timeline: Timeline) -> list[dict[str, Any]]:
    """Transfers per link class, packed greedily into lanes of non-overlapping events."""
    pid = len(graph.ranks) + 1
    spans = sorted(
        (_ns(timeline.start_s[i]), _ns(timeline.end_s[i]), i)
        for i, op in enumerate(graph.ops)
        if op.payload is not None and timeline.end_s[i] > timeline.start_s[i]
    )
    lanes: dict[str, list[int]] = {}  # link class -> end (ns) of the last event in each lane
    tids: dict[tuple[str, int], int] = {}
    events: list[dict[str, Any]] = []
    for start_ns, end_ns, i in spans:
        op = graph.ops[i]
        link = op.payload.link_class if op.payload is not None else ""
        ends = lanes.setdefault(link, [])
        lane = next((k for k, last in enumerate(ends) if last <= start_ns), len(ends))
        if lane == len(ends):
            ends.append(end_ns)
        ends[lane] = end_ns
        tid = tids.setdefault((link, lane), len(tids))
        events.append(_complete(f"{op.name} [{graph.ranks[op.rank].name}]", op.category, pid, tid, (start_ns, end_ns)))
    meta = [_meta("process_name", pid, 0, "fabric (link classes)")] if tids else []
    meta += [_meta("thread_name", pid, tid, f"{link} #{lane}") for (link, lane), tid in tids.items()]
    return meta + events


def trace_document(graph: OpGraph, timeline: Timeline, summary: CommSummary | None = None) -> dict[str, Any]:
    """The trace as a JSON-ready dict (see the module docstring for the layout)."""
    doc: dict[str, Any] = {
        "traceEvents": _gpu_events(graph, timeline) + _fabric_events(graph, timeline),
        "displayTimeUnit": "ms",
    }
    other: dict[str, Any] = {"folded": dict(graph.folded), "notes": list(graph.notes)}
    if summary is not None:
        other["comm_busy_s"] = dict(summary.busy_s)
        other["comm_exposed_s"] = dict(summary.exposed_s)
    doc["otherData"] = other
    return doc


def write_trace(path: str | Path, graph: OpGraph, timeline: Timeline, summary: CommSummary | None = None) -> None:
    """Write the trace JSON atomically (a temp file renamed into place; nothing half-written)."""
    text = json.dumps(trace_document(graph, timeline, summary), separators=(",", ":"))
    write_atomic(path, text, "trace")
