"""A parsed nccl-tests run (layer L8): what :mod:`fabricsim.io.nccl_tests` reads and the fit uses.

Units are SI: sizes in bytes (nccl-tests' S), times in seconds, bandwidths in bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NcclTestsRow:
    """One size of a sweep: out-of-place and in-place time (s) and busbw (bytes/s) as printed.
    ``wrong`` is the ``#wrong`` count (None when the log prints ``error`` or ``N/A``)."""

    size_bytes: int
    count: int
    dtype: str
    time_s: float
    busbw_Bps: float
    in_place_time_s: float
    in_place_busbw_Bps: float
    wrong: int | None = None


@dataclass(frozen=True, slots=True)
class NcclTestsRun:
    """One ``*_perf`` sweep: ``op`` (a CollectiveOp value), ``ranks`` over ``nodes`` hosts, the
    devices named in the rank lines, its rows in size order, and where it came from."""

    op: str
    ranks: int
    nodes: int
    devices: tuple[str, ...]
    rows: tuple[NcclTestsRow, ...]
    source: str
    algorithm: str | None = None  # NCCL_ALGO when the log states it
    avg_busbw_Bps: float | None = None
