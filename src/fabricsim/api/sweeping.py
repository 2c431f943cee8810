"""Sweeps over many scenarios (the task-kind registry lives here) (public API, layer L9)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fabricsim import sweep as sweeps
from fabricsim.api.communication import collective
from fabricsim.api.inference import infer, serve
from fabricsim.api.training import train
from fabricsim.errors import FabricsimError
from fabricsim.metrics import (
    SweepSummary,
)
from fabricsim.specs.inputs import Count, edge


def sweep_runners() -> dict[sweeps.TaskKind, Callable[..., Any]]:
    """The ONE registry of sweep task kinds: kind -> the public function a task of that kind calls.

    Sweep (L8) cannot import this module (L9), so :func:`sweep` injects this registry. A task's
    parameters are the function's keyword arguments (its signature is the spec schema). Adding a
    kind is one line here.
    """
    return {
        sweeps.TaskKind.COLLECTIVE: collective,
        sweeps.TaskKind.TRAIN: train,
        sweeps.TaskKind.INFER: infer,
        sweeps.TaskKind.SERVE: serve,
    }


@edge
def sweep(
    spec: str | Path,
    *,
    db: str | Path | None = None,
    executor: str = "local",
    address: str | None = None,
    workers: Count("WORKERS") | None = None,
    export: str | Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> SweepSummary:
    """Run every task of the YAML sweep ``spec`` not yet in the SQLite store ``db``; export if asked.

    ``db`` defaults to ``<spec name>.sqlite`` in the current folder; ``executor`` is ``local`` (a
    process pool of ``workers`` processes, default: all CPUs) or ``ray`` (join ``address`` or start a
    local Ray). ``export`` writes the spec's rows to ``.csv`` or ``.parquet``. ``on_progress(completed,
    total)`` is called as tasks finish. Re-running a killed sweep completes it; each task is stored once.
    """
    for name, path in (("spec", spec), ("db", db), ("export", export)):  # Path("") would be "."
        if path is not None and not str(path).strip():
            raise FabricsimError(name, "the path is empty", "give a file name")
    runners = sweep_runners()
    parsed = sweeps.load_spec(spec)
    options = sweeps.SweepOptions(
        db_path=Path(db) if db is not None else Path(Path(spec).stem + ".sqlite"),
        executor=sweeps.parse_executor(executor),
        workers=sweeps.default_workers() if workers is None else workers,
        address=address,
        export_path=None if export is None else Path(export),
    )
    sweeps.check_options(options)  # --db and --export first: expanding a large spec takes a while
    count = sweeps.check_task_count(parsed)  # refuses a huge grid before building any task
    if on_progress is not None:
        on_progress(0, count)  # shows the bar while the spec expands
    tasks = sweeps.expand(parsed, runners)
    return sweeps.run_sweep(tasks, runners, options, on_progress)
