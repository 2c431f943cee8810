"""Helpers shared by the CLI commands: choose JSON or a table, and print it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import typer

from fabricsim.cli import options

JSON_OPTION = options.JSON  # the shared declarations live in cli/options.py; these names stay for commands
MODEL_OPTION = options.MODEL
SYSTEM_OPTION = options.SYSTEM


def emit(payload: dict[str, Any], as_json: bool, render: Callable[[dict[str, Any]], Any] | str) -> None:
    """Print ``payload`` as deterministic JSON, or the rich renderable ``render(payload)``; with
    ``--html PATH`` (see :mod:`fabricsim.cli.html_option`) also write its HTML report.

    ``render`` may name a function of :mod:`fabricsim.report.tables`: it is then imported only
    for a table, so ``--json`` runs never load rich (start-up time)."""
    from fabricsim.cli.html_option import HTML_TARGET, write_html_report
    from fabricsim.io.results import dumps

    text = dumps(payload)
    name = render if isinstance(render, str) else render.__name__
    if HTML_TARGET.get() is not None:  # written first: a bad --html path fails before anything is printed
        write_html_report(json.loads(text), name.removesuffix("_table").removesuffix("_tables"))
    if as_json:
        typer.echo(text)
        return
    from rich.console import Console

    if isinstance(render, str):
        from fabricsim.report import tables

        render = getattr(tables, render)
    Console(highlight=False).print(render(payload))
