"""Export stored sweep results to CSV or Parquet (layer L8).

One row per task in task-id order. Columns: ``task_id, kind, status, error``, then one ``param.<name>``
column per task parameter and one ``result.<key>`` column per result key (nested result objects are
flattened with dots, e.g. ``result.time_breakdown_s.compute``), each group sorted by name; a value a
task does not have is empty. Parquet needs the optional ``pyarrow`` package (extra ``parquet``).
"""

from __future__ import annotations

import csv
import importlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fabricsim.errors import FabricsimError
from fabricsim.sweep.tasks import TaskOutcome
from fabricsim.textfile import check_output_path

FIXED_COLUMNS = ("task_id", "kind", "status", "error")
FORMATS = (".csv", ".parquet")


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            _flatten(f"{prefix}.{key}", child, out)
    elif isinstance(value, list):
        out[prefix] = json.dumps(value, sort_keys=True)
    else:
        out[prefix] = value


def flat_record(outcome: TaskOutcome) -> dict[str, Any]:
    """One outcome as a flat ``{column: value}`` mapping."""
    record: dict[str, Any] = {
        "task_id": outcome.task_id,
        "kind": outcome.kind,
        "status": outcome.status,
        "error": outcome.error,
    }
    _flatten("param", json.loads(outcome.params_json), record)
    if outcome.result_json is not None:
        _flatten("result", json.loads(outcome.result_json), record)
    return record


def _columns(records: Sequence[dict[str, Any]]) -> list[str]:
    names = {key for record in records for key in record} - set(FIXED_COLUMNS)
    params = sorted(n for n in names if n.startswith("param."))
    return [*FIXED_COLUMNS, *params, *sorted(names - set(params))]


def export_format(path: str | Path) -> str:
    """The file format from the suffix of ``path`` (``.csv`` or ``.parquet``)."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise FabricsimError("export", f"unknown format {suffix or '(no suffix)'!r}", "name the file .csv or .parquet")
    return suffix


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _replace_atomically(target: Path, write: Any) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:200]}.", suffix=".tmp")
    except OSError as exc:
        problem = f"cannot write in {target.parent}: {exc.strerror}"
        raise FabricsimError("export", problem, "give another path") from None
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file normal permissions
        check_output_path(target, "export")  # still nothing or a regular file just before the rename
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FabricsimError("export", f"cannot write {target}: {exc.strerror}", "give another path") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_csv(path: Path, columns: list[str], records: Sequence[dict[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, restval="", lineterminator="\n")
        writer.writeheader()
        for record in records:
            writer.writerow({k: ("" if v is None else v) for k, v in record.items()})


def _arrow_column(pa: Any, values: list[Any]) -> Any:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types in one column: keep them as text
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _import_pyarrow() -> tuple[Any, Any]:
    try:
        return importlib.import_module("pyarrow"), importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise FabricsimError(
            "export",
            "Parquet needs pyarrow, which is not installed",
            "pip install 'fabricsim[parquet]' or export to .csv",
        ) from None


def _write_parquet(path: Path, columns: list[str], records: Sequence[dict[str, Any]]) -> None:
    pa, parquet = _import_pyarrow()
    arrays = [_arrow_column(pa, [record.get(c) for record in records]) for c in columns]
    parquet.write_table(pa.Table.from_arrays(arrays, names=columns), path)


def check_export(path: str | Path) -> str:
    """Fail early (before a sweep runs) on an unknown format, a missing folder or missing pyarrow."""
    target = check_output_path(path, "export")
    suffix = export_format(target)
    if suffix == ".parquet":
        _import_pyarrow()
    return suffix


def export_results(outcomes: Sequence[TaskOutcome], path: str | Path) -> Path:
    """Write ``outcomes`` (already in task-id order) to ``path``; the format follows the suffix."""
    target = Path(path)
    suffix = check_export(target)
    records = [flat_record(o) for o in outcomes]
    columns = _columns(records)
    writer = _write_csv if suffix == ".csv" else _write_parquet
    _replace_atomically(target, lambda tmp: writer(tmp, columns, records))
    return target
