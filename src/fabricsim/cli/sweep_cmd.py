"""``fabricsim sweep SPEC.yaml``: run a grid or list of scenarios, storing each result in SQLite."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, emit
from fabricsim.cli.progress import progress_bar


def sweep(
    spec: str = typer.Argument(..., help="YAML sweep spec: tasks: [{kind: collective, grid: {...}} | {list: [...]}]"),
    db: str = typer.Option(None, "--db", help="SQLite result store (default: SPEC name + .sqlite); reused to resume"),
    executor: str = typer.Option("local", "--executor", help="local (process pool) | ray"),
    address: str = typer.Option(None, "--address", help="Ray cluster address HOST:PORT (default: start a local Ray)"),
    workers: int = typer.Option(None, "--workers", help="worker processes (default: all CPUs)"),
    export: str = typer.Option(None, "--export", help="also write the spec's results to out.csv or out.parquet"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run every task of SPEC not yet in the store; a killed sweep resumes where it stopped."""
    # paths stay text: typer would turn "" into Path(".") and the error would name a directory
    from fabricsim import api

    with progress_bar("sweep", not as_json) as on_progress:
        summary = api.sweep(
            spec, db=db, executor=executor, address=address, workers=workers, export=export, on_progress=on_progress
        )
    emit(summary.to_json(), as_json, "sweep_table")
