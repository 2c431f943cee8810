"""``fabricsim validate [SUITE]``: run the shipped published-measurement suites."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, emit
from fabricsim.cli.progress import working


def validate(
    suite: str = typer.Argument("all", help="suite name (e.g. training, inference, collectives) or 'all'"),
    as_json: bool = JSON_OPTION,
    system: str | None = typer.Option(None, "--system", help="a calibrated system YAML: report its fit's residuals"),
) -> None:
    """Compare fabricsim's predictions with published measurements, per entry."""
    from fabricsim import api

    with working("validate: running the published-measurement suites"):
        result = api.validate(suite, system)
    emit(result, as_json, "validation_tables")
