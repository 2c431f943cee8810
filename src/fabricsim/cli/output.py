"""Print a command's result (layer L11): JSON or a table, and its ``--html`` report.

Free of typer, so that the fast path (:mod:`fabricsim.cli.fastpath`) prints without importing it;
:mod:`fabricsim.cli.common` re-exports :func:`emit` for the command modules.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


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
        # what typer.echo writes for this text: dumps' JSON is ASCII (no colour codes to strip,
        # nothing to re-encode), one line feed, flushed; nothing where the process has no stdout
        # (started with it closed: sys.stdout is None)
        if sys.stdout is not None:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        return
    from rich.console import Console

    if isinstance(render, str):
        from fabricsim.report import tables

        render = getattr(tables, render)
    Console(highlight=False).print(render(payload))
