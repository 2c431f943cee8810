"""CSV and Parquet export: flat columns, task-id order, clear errors."""

from __future__ import annotations

import csv
import sys

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.sweep import TaskOutcome, export_results

ROWS = [
    TaskOutcome("a1", "collective", '{"gpus":8,"size":"1GiB"}', "ok", '{"time_s":0.5,"split":{"x_s":1}}', None),
    TaskOutcome("b2", "collective", '{"gpus":3,"size":1024}', "failed", None, "gpus: bad (fix)"),
]


def test_csv_has_fixed_param_and_result_columns(tmp_path):
    path = export_results(ROWS, tmp_path / "out.csv")
    with path.open() as handle:
        records = list(csv.DictReader(handle))
    assert list(records[0]) == [
        "task_id",
        "kind",
        "status",
        "error",
        "param.gpus",
        "param.size",
        "result.split.x_s",
        "result.time_s",
    ]
    assert [r["task_id"] for r in records] == ["a1", "b2"]
    assert records[1]["error"] == "gpus: bad (fix)" and records[1]["result.time_s"] == ""


def test_parquet_round_trips_with_mixed_columns_as_text(tmp_path):
    pyarrow_parquet = pytest.importorskip("pyarrow.parquet")
    path = export_results(ROWS, tmp_path / "out.parquet")
    table = pyarrow_parquet.read_table(path).to_pydict()
    assert table["task_id"] == ["a1", "b2"]
    assert table["param.size"] == ["1GiB", "1024"]  # str and int in one column become text
    assert table["result.time_s"] == [0.5, None]


def test_unknown_format_and_missing_pyarrow_are_one_line_errors(tmp_path, monkeypatch):
    with pytest.raises(FabricsimError, match="unknown format"):
        export_results(ROWS, tmp_path / "out.xlsx")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(FabricsimError, match="Parquet needs pyarrow"):
        export_results(ROWS, tmp_path / "out.parquet")


def test_exported_file_has_normal_permissions(tmp_path):
    import os
    import stat

    umask = os.umask(0o022)
    try:
        path = export_results(ROWS, tmp_path / "out.csv")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # not mkstemp's 0600
