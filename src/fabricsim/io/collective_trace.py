"""Perfetto / Chrome trace JSON of a collective run at packet level (layer L10).

The collective's steps one after another on one time axis: process ``steps`` has one slice per
schedule step (``"ph": "X"``, its start and duration), and processes ``flows`` and ``queues`` carry
each step's counters as :func:`fabricsim.io.packet_trace.trace_document` draws them for one run
(per-flow CC rate and delivered throughput in Gb/s, per-link egress queue in KB), shifted to the
step's start. A folded step (equal to the one before) repeats that step's run; a step whose
scale-up legs ran apart from its NIC legs has two runs, both drawn as that step (the shorter slice
nested in the longer). Times in us.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabricsim.io.packet_trace import trace_document
from fabricsim.io.results import dumps, write_atomic
from fabricsim.network.packet.model import PacketRun

STEPS_PID = 3


def collective_trace_document(step_runs: tuple[tuple[float, PacketRun], ...], link_names: tuple[str, ...]) -> dict:
    """The trace object of ``step_runs`` ((start s, run) per step, in order)."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "flows"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "queues"}},
        {"ph": "M", "name": "process_name", "pid": STEPS_PID, "args": {"name": "steps"}},
    ]
    names = list(link_names)
    k, last = -1, None
    for start_s, run in step_runs:
        if start_s != last:  # a step of NVLink and NIC legs has two runs at one start (api/network_collective.py)
            k, last = k + 1, start_s
        offset_us = start_s * 1e6
        events.append({"ph": "X", "pid": STEPS_PID, "tid": 0, "name": f"step {k}", "ts": offset_us,
                       "dur": run.end_s * 1e6, "args": {"flows": run.flows.count}})  # fmt: skip
        for event in trace_document(run, names)["traceEvents"]:
            if event["ph"] != "M":
                events.append({**event, "ts": event["ts"] + offset_us})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_collective_trace(path: str | Path, step_runs: tuple[tuple[float, PacketRun], ...],
                           link_names: tuple[str, ...]) -> None:  # fmt: skip
    """Write the trace atomically, only over nothing or a regular file (:func:`fabricsim.io.results.write_atomic`)."""
    write_atomic(path, dumps(collective_trace_document(step_runs, link_names)), "trace")
