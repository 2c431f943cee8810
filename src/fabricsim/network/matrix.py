"""A traffic matrix from a file: ``traffic --matrix FILE`` (layer L3).

One flow per row, CSV with a header or JSON Lines (one object per line), with the keys ``src``,
``dst`` (host indices, 0-based, of the hosts in use), ``bytes`` (> 0) and ``start_s`` (>= 0,
seconds; optional, default 0), and optionally ``class`` (the flow's traffic class at packet fidelity,
0 .. 7, default 0; with ``--cc-param classes=N``). Every row is checked and a bad one is a one-line error naming its
line; each flow gets its own ECMP label (its row), so two flows of one pair are two connections.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.limits import cap, cap_hint, check_cap
from fabricsim.network.base import FlowSet, make_flows
from fabricsim.network.packet.layout import MAX_CLASSES
from fabricsim.textfile import table_rows

FIELD = "matrix"  # the option that names the file, in every error
KEYS = ("src", "dst", "bytes", "start_s", "class")
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
HINT = "one row per flow: src,dst,bytes,start_s (hosts 0-based, bytes > 0, start_s >= 0 seconds)"


def _number(record: dict, key: str, line: int) -> float:
    value = record.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if key in ("start_s", "class"):
            return 0.0
        raise FabricsimError(FIELD, f"line {line}: missing {key}", HINT)
    if isinstance(value, bool):
        raise FabricsimError(FIELD, f"line {line}: {key} must be a number, got {value!r}", HINT)
    try:
        return float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError, OverflowError):
        raise FabricsimError(FIELD, f"line {line}: {key} must be a number, got {str(value)[:40]!r}", HINT) from None


def _row(record: object, line: int, hosts: int) -> tuple[int, int, float, float, int]:
    """(src, dst, bytes, start_s, class) of one record, every value checked."""
    if not isinstance(record, dict):
        raise FabricsimError(FIELD, f"line {line}: not a record", "write one JSON object per line")
    unknown = sorted(str(k) for k in record if k not in KEYS)
    if unknown:
        raise FabricsimError(FIELD, f"line {line}: unknown key {unknown[0][:40]!r}", f"use {', '.join(KEYS)}")
    src, dst, size, start, klass = (_number(record, key, line) for key in KEYS)
    if not (math.isfinite(klass) and klass == int(klass) and 0 <= klass < MAX_CLASSES):
        raise FabricsimError(FIELD, f"line {line}: class {klass:g} is not a traffic class in 0..{MAX_CLASSES - 1}",
                             "class is a whole number 0 (the highest priority) .. 7")  # fmt: skip
    for key, host in (("src", src), ("dst", dst)):
        if not (math.isfinite(host) and host == int(host) and 0 <= host < hosts):
            raise FabricsimError(FIELD, f"line {line}: {key} {host:g} is not a host in 0..{hosts - 1}", HINT)
    if src == dst:
        raise FabricsimError(FIELD, f"line {line}: src and dst are both host {int(src)}", "a flow joins two hosts")
    if not (math.isfinite(size) and size > 0):
        raise FabricsimError(FIELD, f"line {line}: bytes must be a finite number > 0, got {size:g}", HINT)
    limit = cap("SIZE_BYTES")
    if size > limit:
        raise FabricsimError(FIELD, f"line {line}: bytes {size:g} exceed the cap {limit}", cap_hint("SIZE_BYTES"))
    if not (math.isfinite(start) and start >= 0):
        raise FabricsimError(FIELD, f"line {line}: start_s must be a finite time >= 0, got {start:g}", HINT)
    return int(src), int(dst), float(math.ceil(size)), start, int(klass)


def parse_matrix(text: str, jsonl: bool, hosts: int) -> FlowSet:
    """The flows of a traffic matrix (see the module doc) over ``hosts`` hosts. A leading UTF-8
    byte-order mark (spreadsheets write one) is dropped. Sizes are whole bytes (rounded up)."""
    records = table_rows(text, jsonl, FIELD, (HINT, HINT, HINT))
    check_cap(f"{FIELD} rows", len(records), "FLOWS")
    rows = [_row(record, line, hosts) for line, record in records]
    if not rows:
        raise FabricsimError(FIELD, "the file holds no flows", HINT)
    table = np.array(rows, dtype=float)
    src, dst = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
    flows = make_flows(src, dst, table[:, 2], table[:, 3], np.arange(len(rows)))
    if not any("class" in record for _, record in records if isinstance(record, dict)):
        return flows
    return replace(flows, traffic_class=table[:, 4].astype(np.int64))
