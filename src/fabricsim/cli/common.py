"""Helpers shared by the CLI commands: the common options, and :func:`emit` (JSON or a table; it lives in
:mod:`fabricsim.cli.output`, free of typer)."""

from __future__ import annotations

from fabricsim.cli import options
from fabricsim.cli.output import emit

JSON_OPTION = options.JSON  # the shared declarations live in cli/options.py; these names stay for commands
MODEL_OPTION = options.MODEL
SYSTEM_OPTION = options.SYSTEM

__all__ = ["JSON_OPTION", "MODEL_OPTION", "SYSTEM_OPTION", "emit"]
