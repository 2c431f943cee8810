"""Perfetto / Chrome trace JSON of a packet-level traffic run (layer L10).

Counter events (``"ph": "C"``, ``ts`` in microseconds) from the run's time series: one process
``flows`` with, per flow, its congestion-control rate (Gb/s) and its delivered throughput in the
sample interval (Gb/s); one process ``queues`` with the egress queue (KB) of every link that ever
held a packet. ui.perfetto.dev and chrome://tracing open the file directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.io.results import dumps, write_atomic
from fabricsim.network.packet.model import PacketRun

MAX_TRACKS = 64  # flows (largest) and links (deepest queue) drawn at most: the trace stays small


def _counter(pid: int, name: str, ts_us: float, args: dict[str, float]) -> dict[str, Any]:
    return {"ph": "C", "pid": pid, "name": name, "ts": ts_us, "args": args}


def trace_document(run: PacketRun, link_names: list[str]) -> dict[str, Any]:
    """The trace object; ``link_names[l]`` labels link l (e.g. ``"12->40"``)."""
    dt = run.sample_dt_s
    rows = run.series_delivered.shape[0]
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "flows"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "queues"}},
    ]
    if rows == 0:
        return {"traceEvents": events, "displayTimeUnit": "ns"}
    thru = np.diff(run.series_delivered, axis=0, prepend=0.0) / dt * 8 / 1e9
    flows = np.argsort(-run.flows.size_bytes, kind="stable")[:MAX_TRACKS]
    links = np.argsort(-run.queue_max_bytes, kind="stable")[:MAX_TRACKS]
    links = links[run.queue_max_bytes[links] > 0]
    for k in range(rows):
        ts = k * dt * 1e6
        for f in flows:
            rate = float(run.series_rate[k, f]) * 8 / 1e9
            events.append(_counter(1, f"flow {int(f)}", ts, {"rate_Gbps": rate, "delivered_Gbps": float(thru[k, f])}))
        for lk in links:
            events.append(_counter(2, f"link {link_names[lk]}", ts, {"queue_KB": float(run.series_queue[k, lk]) / 1e3}))
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_packet_trace(path: str | Path, run: PacketRun, link_names: list[str]) -> None:
    """Write the trace atomically, only over nothing or a regular file (:func:`fabricsim.io.results.write_atomic`)."""
    write_atomic(path, dumps(trace_document(run, link_names)), "trace")
