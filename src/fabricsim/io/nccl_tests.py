"""Read nccl-tests / rccl-tests output (layer L10) into :class:`~fabricsim.calibration.NcclTestsRun`.

Format (NVIDIA/nccl-tests ``src/common.cu``, doc/PERFORMANCE.md): a ``# nThread .. nGpus ..`` header,
one ``#  Rank r Group g Pid p on HOST device d [bus] NAME`` line per rank, then one row per size:
``size count type [redop] [root]`` followed by out-of-place ``time algbw busbw #wrong`` and the same
four in-place. Times are microseconds (no decimals from 10 ms up), bandwidths GB/s (1e9 B/s).
Older versions print a floating ``error`` instead of ``#wrong``, ``N/A`` when validation is off;
rccl-tests omits ``root`` for some ops, so a row is read from both ends. Rows of size 0 carry
no timing and are skipped. A row whose ``#wrong`` is not 0 failed nccl-tests' own check: the log
is refused rather than fitted.
"""

from __future__ import annotations

import math
import re

from fabricsim.calibration.measurements import NcclTestsRow, NcclTestsRun
from fabricsim.collectives import CollectiveOp, bus_factor
from fabricsim.errors import FabricsimError
from fabricsim.measure import MeasureResult

_US = 1e-6
_GB = 1e9
_PERF_OPS = {  # nccl-tests binary stem -> CollectiveOp value
    "all_reduce": "all-reduce",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "alltoall": "all-to-all",
    "sendrecv": "send-recv",
    "broadcast": "broadcast",
    "reduce": "reduce",
}
_PERF_NAMES = {op: stem for stem, op in _PERF_OPS.items()}
_PERF_RE = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|alltoall|sendrecv|broadcast|reduce)_perf\b")
_RANK_RE = re.compile(r"^#\s*Rank\s+(\d+)\b.*?\bon\s+(\S+)\s+device\s+\d+\s*(?:\[[^\]]*\])?\s*(.*)$")
_ALGO_RE = re.compile(r"\bNCCL_ALGO\s*=\s*([A-Za-z_,^]+)")
_AVG_RE = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_MPI_PREFIX = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:\s?")
_TAIL = 8  # out-of-place and in-place: time, algbw, busbw, #wrong


def _number(token: str, what: str, line_no: int, source: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise FabricsimError(
            "log", f"{source} line {line_no}: {what} {token!r} is not a number", "give unmodified nccl-tests output"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise FabricsimError(
            "log",
            f"{source} line {line_no}: {what} {token!r} is not a finite number >= 0",
            "give unmodified nccl-tests output",
        )
    return value


def _wrong(token: str) -> int | None:
    """``#wrong`` is an integer count; the older ``error`` column a float, ``N/A`` without checks."""
    return int(token) if token.isdigit() else None


def _row(tokens: list[str], line_no: int, source: str) -> NcclTestsRow | None:
    size, count = int(tokens[0]), int(tokens[1])
    tail = tokens[-_TAIL:]
    time_s = _number(tail[0], "time", line_no, source) * _US
    in_place_s = _number(tail[4], "in-place time", line_no, source) * _US
    busbw = _number(tail[2], "busbw", line_no, source) * _GB
    in_place_busbw = _number(tail[6], "in-place busbw", line_no, source) * _GB
    wrong = [w for w in (_wrong(tail[3]), _wrong(tail[7])) if w is not None]
    if any(wrong):
        raise FabricsimError(
            "log",
            f"{source} line {line_no}: size {size} B has {max(wrong)} wrong values",
            "nccl-tests' own check failed; rerun before calibrating",
        )
    if size == 0:
        return None
    if time_s <= 0.0:
        raise FabricsimError("log", f"{source} line {line_no}: time 0 for size {size} B", "rerun nccl-tests")
    return NcclTestsRow(
        size, count, tokens[2], time_s, busbw, in_place_s, in_place_busbw, max(wrong) if wrong else None
    )


def _is_row(tokens: list[str]) -> bool:
    return len(tokens) >= 3 + _TAIL and tokens[0].isdigit() and tokens[1].isdigit() and len(tokens) <= 5 + _TAIL


def _detect_op(text: str, op: str | None, source: str) -> str:
    """The op of a log: the one its ``*_perf`` binary names. ``op`` (``--op``) names it for a log that
    does not, or picks one of several; an ``op`` that contradicts the log's only binary is refused
    (fitting an all_reduce_perf log as all-to-all gives a wrong bandwidth, silently)."""
    found = {_PERF_OPS[m] for m in _PERF_RE.findall(text)}
    if op is not None:
        if len(found) == 1 and op not in found:
            named = found.pop()
            raise FabricsimError(
                "op",
                f"{op} contradicts {source}, whose binary is {_PERF_NAMES[named]}_perf ({named})",
                f"drop --op (the log names its op) or give {_PERF_NAMES[op]}_perf output",
            )
        return op
    if len(found) != 1:
        problem = "does not name its nccl-tests binary" if not found else f"names several binaries ({sorted(found)})"
        raise FabricsimError("op", f"{source} {problem}", "pass --op all-reduce|all-gather|... for this log")
    return found.pop()


def parse_nccl_tests(text: str, source: str, op: str | None = None) -> NcclTestsRun:
    """Parse one nccl-tests (or rccl-tests) log. ``op`` (a CollectiveOp value) overrides the op
    found from the ``*_perf`` binary name in the log. Raises FabricsimError(field "log") for a log
    without rank lines or rows, or with a failed correctness check."""
    hosts: dict[int, str] = {}
    devices: dict[int, str] = {}
    rows: list[NcclTestsRow] = []
    algorithm, avg = None, None
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = _MPI_PREFIX.sub("", raw).strip()
        if line.startswith("#"):
            rank = _RANK_RE.match(line)
            if rank:
                hosts[int(rank.group(1))] = rank.group(2)
                devices[int(rank.group(1))] = rank.group(3).strip()
            average = _AVG_RE.match(line)
            if average:
                avg = float(average.group(1)) * _GB
            continue
        algo = _ALGO_RE.search(line)
        if algo:
            algorithm = algo.group(1)
        tokens = line.split()
        if _is_row(tokens):
            row = _row(tokens, line_no, source)
            if row is not None:
                rows.append(row)
    if not hosts:
        raise FabricsimError(
            "log",
            f"{source} has no '#  Rank ... on HOST device ...' lines",
            "give the whole nccl-tests output, header included",
        )
    if not rows:
        raise FabricsimError("log", f"{source} has no result rows", "give the whole nccl-tests output")
    rows.sort(key=lambda r: r.size_bytes)
    return NcclTestsRun(
        op=_detect_op(text, op, source),
        ranks=len(hosts),
        nodes=len(set(hosts.values())),
        devices=tuple(sorted(set(devices.values()))),
        rows=tuple(rows),
        source=source,
        algorithm=algorithm,
        avg_busbw_Bps=avg,
    )


_COLUMNS = """#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"""


def _time_text(time_s: float) -> str:
    """nccl-tests' time column: 2 decimals below 100 us, 1 below 10 ms, none above."""
    us = time_s / _US
    return f"{us:7.0f}" if us >= 1e4 else f"{us:7.1f}" if us >= 100 else f"{us:7.2f}"


def format_nccl_tests(result: MeasureResult) -> str:
    """A :class:`~fabricsim.measure.MeasureResult` as nccl-tests prints a sweep (see module
    docstring), with a first comment line naming the tool and the equivalent ``*_perf`` binary."""
    spec = result.spec
    op = CollectiveOp(spec.op)
    factor = bus_factor(op, spec.ranks)
    redop, root = ("sum", -1) if op is CollectiveOp.ALL_REDUCE else ("none", 0 if op is CollectiveOp.BROADCAST else -1)
    sizes = [row.size_bytes for row in result.rows]
    lines = [
        f"# fabricsim measure collective: {_PERF_NAMES[spec.op]}_perf equivalent, torch.distributed "
        f"{result.torch_version} backend {spec.backend}, {spec.ranks} ranks on {result.host}",
        f"# nThread 1 nGpus 1 minBytes {min(sizes)} maxBytes {max(sizes)} step: list warmup iters: {spec.warmup} "
        f"iters: {spec.iters} agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    pids = result.pids or (0,) * spec.ranks
    for rank in range(spec.ranks):
        lines.append(
            f"#  Rank {rank:2d} Group  0 Pid {pids[rank]:6d} on {result.host} device {rank:2d} "
            f"[{spec.backend}] {result.device}"
        )
    lines += ["#", _COLUMNS]
    busbw_sum = 0.0
    for row in result.rows:
        cells = []
        for time_s in (row.time_s, row.second_time_s):
            algbw = row.size_bytes / time_s / _GB
            cells.append(f"{_time_text(time_s)} {algbw:7.2f} {algbw * factor:7.2f} {row.wrong:6d}")
        busbw_sum += row.size_bytes / row.time_s / _GB * factor
        lines.append(
            f"{row.size_bytes:12d}  {row.count:12d}  {'float':>8s}  {redop:>6s}  {root:6d}  " + "  ".join(cells)
        )
    wrong = sum(row.wrong for row in result.rows)
    lines.append(f"# Out of bounds values : {wrong} {'OK' if wrong == 0 else 'FAILED'}")
    lines.append(f"# Avg bus bandwidth    : {busbw_sum / len(result.rows):.3f} ")
    return "\n".join(lines) + "\n"
