"""Fuzz ``fabricsim report`` and ``fabricsim replay`` with hostile files (issue 27).

``report`` gets result JSON of every kind with keys dropped or retyped, traces with bad events,
deep nesting, huge integers and text that is not JSON; ``replay`` gets random bytes and protobuf
messages built with :mod:`fabricsim.io.protowire` (wrong wire types, huge lengths and varints,
unknown node types and attributes, dependencies on missing nodes), cut short, gzip-compressed,
corrupted, or a small gzip bomb under the lowered ``INPUT_BYTES`` cap. Each case must exit 0 or 2,
print exactly one ``error:`` line on 2 and no traceback, and write nothing but the output it was
asked for (a read-only file given as the output stays as it was). The caps are those of
``tests/cli/test_fuzz_cli.py``; ``FABRICSIM_FUZZ_EXAMPLES`` scales the number of cases.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.cli.test_fuzz_cli import EXAMPLES, LOW_CAPS, _snapshot

from fabricsim.cli.app import main
from fabricsim.io import protowire as pw

FUZZ = settings(max_examples=max(10, EXAMPLES // 10), deadline=None, suppress_health_check=list(HealthCheck),
                database=None)
KEEP = "read-only: keep me\n"

TEMPLATES: dict[str, dict[str, Any]] = {
    "train": {"step_time_s": 1.5, "tokens_per_s": 1e5, "mfu": 0.4, "memory_per_gpu_bytes": 5e10, "fidelity": "simulate",
              "time_breakdown_s": {"compute_s": 1.0, "tp_s": 0.5}, "memory_breakdown_bytes": {"weights": 1e10},
              "comm_busy_s": {"tp": 0.5}, "exposed_comm_s": {"tp": 0.2}},
    "infer": {"ttft_s": 0.1, "tpot_s": 0.01, "e2e_latency_s": 1.0, "batch": 4, "time_breakdown_s": {"prefill_s": 0.1}},
    "serve": {"ttft_s": {"p50": 0.1, "p90": 0.2, "p99": 0.3}, "tpot_s": {"p50": 0.01, "p99": 0.02},
              "e2e_s": {"p50": 1.0, "p99": 2.0}, "output_tokens_per_s": 100.0, "arrival_rate_per_s": 5.0},
    "plan": {"evaluated": 10, "feasible": 5, "elapsed_s": 0.1,
             "plans": [{"rank": 1, "layout": {"tp": 8, "pp": 1}, "tokens_per_s": 1e4, "memory_per_gpu_bytes": 4e10,
                        "step_time_s": 1.0}]},
    "traffic": {"hosts": 16, "flows": 16, "completion_time_s": 0.01, "max_link_utilization": 0.9,
                "throughput_fraction": {"mean": 0.8, "p1": 0.5, "min": 0.4}, "fct_s": [0.001, 0.002]},
    "validate": {"suites": [{"name": "s", "mean_abs_error": 0.1,
                             "entries": [{"measured": 1.0, "predicted": 1.1, "unit": "s"}]}]},
    "collective": {"op": "all-reduce", "time_s": 1e-3, "algbw_GBps": 40.0, "busbw_GBps": 70.0, "algorithm": "ring"},
    "calibration": {"runs": [], "summary_from_1MiB": {"median_abs_error": 0.01},
                    "residuals": [{"op": "all-reduce", "size_bytes": 1024, "measured_busbw_GBps": 1.0,
                                   "predicted_busbw_GBps": 1.1}]},
    "timeline": {"traceEvents": [{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "compute"}},
                                 {"ph": "X", "name": "fwd", "pid": 0, "tid": 1, "ts": 0, "dur": 10},
                                 {"ph": "X", "name": "bwd", "pid": 0, "tid": 1, "ts": 10, "dur": 20}]},
    "replay": {"workload": "chakra", "step_time_s": 1.0, "ranks": 2, "ops": 10, "comm_busy_s": {"all-reduce": 0.1},
               "exposed_comm_s": {"all-reduce": 0.05}},
}

# JSON values of every type, including the hostile ones: huge integers, NaN/inf, deep-ish nesting
SCALARS = (st.none() | st.booleans() | st.integers() | st.sampled_from([10**400, -(10**300), 2**63, 0, -1])
           | st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1e308, 5e-324, -1e308])
           | st.text(max_size=8))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path into dicts and lists of ``value``."""
    out = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in items:
        out.append((*prefix, key))
        out.extend(_paths(child, (*prefix, key)))
    return out


@st.composite
def mutated_results(draw: st.DrawFn) -> dict[str, Any]:
    """A result of a random kind with one to three keys dropped or given a random value."""
    result = json.loads(json.dumps(TEMPLATES[draw(st.sampled_from(sorted(TEMPLATES)))]))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(result)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = result
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(JSON_VALUES)
    return result


HOSTILE_TEXTS = ["[" * 100_000 + "]" * 100_000, '{"a": ' + "9" * 5000 + "}", "{", "", "\ufeff{}", "[1]", "null",
                 '{"traceEvents": [' + ", ".join(['{"ph": "X", "ts": "abc", "dur": null, "name": 5}'] * 3) + "]}",
                 '{"a": ' + "[" * 150 + "]" * 150 + "}", '{"busbw_GBps": NaN, "algbw_GBps": Infinity}']
REPORT_TEXTS = (mutated_results().map(json.dumps) | st.sampled_from(HOSTILE_TEXTS)
                | st.dictionaries(st.sampled_from(sorted({k for t in TEMPLATES.values() for k in t})), JSON_VALUES,
                                  max_size=4).map(json.dumps))


@pytest.fixture()
def arena(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in LOW_CAPS.items():
        monkeypatch.setenv(f"FABRICSIM_MAX_{name}", str(value))
    for folder in ("in", "work"):
        (tmp_path / folder).mkdir()
    read_only = tmp_path / "work" / "ro.out"
    read_only.write_text(KEEP)
    read_only.chmod(0o444)
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path


def _outputs(root: Path) -> list[str]:
    work = root / "work"
    return [str(work / "r.out"), str(work / "ro.out"), str(work / "missing" / "r.out"), str(work), "/dev/null", ""]


def _check(argv: list[str], output: str, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = root / "work"
    before = _snapshot(work)
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc in (0, 2), (argv, rc, captured.err[-2000:])
    assert "Traceback" not in captured.err, (argv, captured.err[-2000:])
    if rc == 2:
        assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, (argv, captured.err)
        assert captured.out == "", argv
    new = _snapshot(work) - before
    assert new <= {os.path.relpath(output, work)} if output.startswith(str(work)) else not new, (argv, new)
    for name in new:
        (work / name).unlink()
    read_only = work / "ro.out"
    assert read_only.read_text() == KEEP and stat.S_IMODE(read_only.stat().st_mode) == 0o444, argv
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_fuzz_report(arena: Path, capsys: pytest.CaptureFixture[str]) -> None:
    @FUZZ
    @given(st.lists(REPORT_TEXTS, min_size=1, max_size=3), st.sampled_from(_outputs(arena)))
    def case(texts: list[str], output: str) -> None:
        files = []
        for k, text in enumerate(texts):
            path = arena / "in" / f"r{k}.json"
            path.write_text(text, encoding="utf-8")
            files.append(str(path))
        _check(["report", *files, "--out", output], output, arena, capsys)

    case()


# --- replay: protobuf messages built with fabricsim's own encoder ---------------------------------

VARINTS = st.sampled_from([0, 1, 7, 99, 2**31, 2**32 - 1, 2**40, 2**62, 2**63, 2**64 - 1]) | st.integers(0, 2**64 - 1)
NODE_TYPES = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 99, 2**32 - 1])
ATTR_NAMES = st.sampled_from([b"comm_type", b"comm_size", b"comm_src", b"comm_dst", b"comm_tag", b"num_ops", b"pg_name",
                              b"involved_dim", b"x"])


def _raw_field(draw: st.DrawFn, numbers: st.SearchStrategy[int]) -> bytes:
    """One field with a random number and wire type, and a value that fits the wire type or not."""
    number, wire = draw(numbers), draw(st.sampled_from([pw.VARINT, pw.FIXED64, pw.LENGTH, pw.FIXED32]))
    if wire == pw.VARINT:
        return pw.varint_field(number, draw(VARINTS))
    if wire == pw.LENGTH:
        body = draw(st.binary(max_size=12))
        if draw(st.integers(0, 9)) == 0:  # a length far past the end of the message
            return pw.key(number, wire) + pw.write_varint(draw(VARINTS)) + body
        return pw.bytes_field(number, body)
    width = 8 if wire == pw.FIXED64 else 4
    return pw.key(number, wire) + draw(st.binary(min_size=width - draw(st.sampled_from([0] * 7 + [1])), max_size=width))


SMALL = st.integers(0, 3) | VARINTS


@st.composite
def attributes(draw: st.DrawFn) -> bytes:
    """An AttributeProto: a known name and, mostly, a value of a type replay reads (int, uint,
    string); sometimes a value field of any number and wire type."""
    name = pw.bytes_field(1, draw(ATTR_NAMES))
    shape = draw(st.integers(0, 9))
    if shape <= 6:
        return name + pw.varint_field(draw(st.sampled_from([7, 9, 11, 13, 15, 17, 27])), draw(SMALL))
    if shape == 7:
        return name + pw.bytes_field(draw(st.sampled_from([29, 31])), draw(st.binary(max_size=10)))
    if shape == 8:  # an int64 / uint64 / bool list, packed
        packed = b"".join(pw.write_varint(v) for v in draw(st.lists(SMALL, max_size=3)))
        return name + pw.bytes_field(draw(st.sampled_from([10, 14, 28])), pw.bytes_field(1, packed))
    return name + _raw_field(draw, st.integers(1, 33))


@st.composite
def nodes(draw: st.DrawFn, node_id: int, ids: int) -> bytes:
    """A Node message: the fields replay reads, mostly well formed, sometimes with random fields."""
    out = pw.varint_field(1, node_id) + pw.bytes_field(2, b"n%d" % node_id) + pw.varint_field(3, draw(NODE_TYPES))
    if draw(st.booleans()):
        out += pw.varint_field(7, draw(st.sampled_from([0, 1, 5, 1000, 2**63])))
    for dep in draw(st.lists(st.integers(1, ids), max_size=2)):  # cycles included
        if dep != node_id:
            out += pw.varint_field(draw(st.sampled_from([4, 5])), dep)
    for _ in range(draw(st.integers(0, 4))):
        out += pw.bytes_field(10, draw(attributes()))
    if draw(st.integers(0, 11)) == 0:
        out += _raw_field(draw, st.integers(1, 12))
    return out


@st.composite
def rank_files(draw: st.DrawFn) -> bytes:
    """One rank's file: GlobalMetadata and a few nodes."""
    count = draw(st.integers(0, 6))
    messages = [pw.bytes_field(1, b"0.0.4")] + [draw(nodes(k, count)) for k in range(1, count + 1)]
    return b"".join(pw.write_varint(len(m)) + m for m in messages)


DAMAGE = ["none", "none", "none", "none", "gzip", "truncate", "gzip-corrupt", "random", "bomb"]


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` as it is, gzip'd, cut short, gzip'd and corrupted, replaced by random bytes, or a
    gzip bomb (zeros, 2x the lowered 1 MiB cap, in a few KB)."""
    how = draw(st.sampled_from(DAMAGE))
    if how == "random":
        return draw(st.binary(max_size=64))
    if how == "bomb":
        return gzip.compress(bytes(2 * LOW_CAPS["INPUT_BYTES"]), mtime=0)
    if how == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if how.startswith("gzip"):
        data = gzip.compress(data, mtime=0)
    if how == "gzip-corrupt":
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(max_size=8))
    return data


def test_fuzz_replay(arena: Path, capsys: pytest.CaptureFixture[str]) -> None:
    @FUZZ
    @given(st.lists(rank_files(), min_size=1, max_size=3), st.data(), st.sampled_from([None, *_outputs(arena)]),
           st.booleans())
    def case(files: list[bytes], data: st.DataObject, output: str | None, system: bool) -> None:
        victim = data.draw(st.integers(0, len(files) - 1))
        files[victim] = data.draw(damaged(files[victim]))
        paths = []
        for rank, content in enumerate(files):
            path = arena / "in" / f"t.{rank}.et"
            path.write_bytes(content)
            paths.append(str(path))
        argv = ["replay", *paths, "--json", *(["--system", "dgx-h100"] if system else [])]
        _check([*argv, *(["--trace", output] if output is not None else [])], output or "", arena, capsys)

    case()
