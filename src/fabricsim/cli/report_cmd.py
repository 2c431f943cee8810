"""``fabricsim report RESULT.json... --out report.html``: a self-contained HTML report with plots."""

from __future__ import annotations

import typer


def report(
    results: list[str] = typer.Argument(..., help="result JSON files (--json output) or Chrome trace JSON files"),
    out: str = typer.Option(..., "--out", help="HTML file to write"),
    title: str = typer.Option("fabricsim report", "--title", help="the page title"),
) -> None:
    """Write one self-contained HTML file (no network needed) with plots of each result."""
    from fabricsim.io.output import write_output
    from fabricsim.io.results import check_output_path, read_results
    from fabricsim.report.html import render_report

    check_output_path(out, "out")  # before reading and drawing, so a bad --out costs nothing
    payloads = read_results(list(results))
    write_output(out, render_report(payloads, list(results), title=title, field="out"), "out")
    typer.echo(f"wrote {out}")
