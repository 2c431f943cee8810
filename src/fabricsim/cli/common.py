"""Helpers shared by the CLI commands: choose JSON or a table, and print it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object on stdout instead of a table.")


def emit(payload: dict[str, Any], as_json: bool, render: Callable[[dict[str, Any]], Any]) -> None:
    """Print ``payload`` as deterministic JSON, or the rich renderable ``render(payload)``."""
    if as_json:
        from fabricsim.io.results import dumps

        typer.echo(dumps(payload))
        return
    from rich.console import Console

    Console(highlight=False).print(render(payload))

MODEL_OPTION = typer.Option(..., "--model", help="catalog model name, model YAML or Hugging Face config.json")
SYSTEM_OPTION = typer.Option(..., "--system", help="catalog system name or YAML path")
