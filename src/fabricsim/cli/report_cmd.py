"""``fabricsim report RESULT.json... --out report.html``: a self-contained HTML report with plots."""

from __future__ import annotations

import typer

MAX_RESULT_BYTES = 256 * 2**20


def _load(path: str) -> dict:
    import json
    from pathlib import Path

    from fabricsim.errors import FabricsimError

    file = Path(path)
    try:
        if not file.is_file():
            raise FabricsimError("result", f"{path} is not a file", "give result JSON files (--json output)")
        if file.stat().st_size > MAX_RESULT_BYTES:
            raise FabricsimError("result", f"{path} is larger than {MAX_RESULT_BYTES >> 20} MiB", "give one result")
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise FabricsimError("result", f"cannot read {path}: {exc.strerror}", "check the path") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise FabricsimError("result", f"{path} is not JSON", "give the output of a command run with --json") from None
    if not isinstance(data, dict):
        raise FabricsimError("result", f"{path} does not hold a JSON object", "give --json output")
    return data


def report(
    results: list[str] = typer.Argument(..., help="result JSON files (--json output) or Chrome trace JSON files"),
    out: str = typer.Option(..., "--out", help="HTML file to write"),
    title: str = typer.Option("fabricsim report", "--title", help="the page title"),
) -> None:
    """Write one self-contained HTML file (no network needed) with plots of each result."""
    from fabricsim.io.output import write_output
    from fabricsim.report.html import render_report

    payloads = [_load(path) for path in results]
    write_output(out, render_report(payloads, list(results), title=title), "out")
    typer.echo(f"wrote {out}")
