"""``fabricsim sweep SPEC.yaml``: run a grid or list of scenarios, storing each result in SQLite."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from fabricsim.cli.common import JSON_OPTION, emit


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr, as an ``on_progress(completed, total)`` callback (None if off)."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task("sweep", total=None)

        def update(completed: int, total: int) -> None:
            progress.update(bar, completed=completed, total=total)

        yield update


def sweep(
    spec: Path = typer.Argument(..., help="YAML sweep spec: tasks: [{kind: collective, grid: {...}} | {list: [...]}]"),
    db: Path = typer.Option(None, "--db", help="SQLite result store (default: SPEC name + .sqlite); reused to resume"),
    executor: str = typer.Option("local", "--executor", help="local (process pool) | ray"),
    address: str = typer.Option(None, "--address", help="Ray cluster address HOST:PORT (default: start a local Ray)"),
    workers: int = typer.Option(None, "--workers", help="worker processes (default: all CPUs)"),
    export: Path = typer.Option(None, "--export", help="also write the spec's results to out.csv or out.parquet"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run every task of SPEC not yet in the store; a killed sweep resumes where it stopped."""
    from fabricsim import api
    from fabricsim.report.tables import sweep_table

    with _progress_bar(not as_json and sys.stderr.isatty()) as on_progress:
        summary = api.sweep(
            spec, db=db, executor=executor, address=address, workers=workers, export=export, on_progress=on_progress
        )
    emit(summary.to_json(), as_json, sweep_table)
