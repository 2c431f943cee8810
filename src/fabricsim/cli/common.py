"""Helpers shared by the CLI commands: choose JSON or a table, and print it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import typer

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object on stdout instead of a table.")


def emit(payload: dict[str, Any], as_json: bool, render: Callable[[dict[str, Any]], Any]) -> None:
    """Print ``payload`` as deterministic JSON, or the rich renderable ``render(payload)``; with
    ``--html PATH`` (see :mod:`fabricsim.cli.html_option`) also write its HTML report."""
    from fabricsim.cli.html_option import HTML_TARGET, write_html_report
    from fabricsim.io.results import dumps

    text = dumps(payload)
    if HTML_TARGET.get() is not None:  # written first: a bad --html path fails before anything is printed
        write_html_report(json.loads(text), render.__name__.removesuffix("_table").removesuffix("_tables"))
    if as_json:
        typer.echo(text)
    else:
        from rich.console import Console

        Console(highlight=False).print(render(payload))

MODEL_OPTION = typer.Option(..., "--model", help="catalog model name, model YAML or Hugging Face config.json")
SYSTEM_OPTION = typer.Option(..., "--system", help="catalog system name or YAML path")
