"""The ``fabricsim`` command line (layer L11): parse, call :mod:`fabricsim.api`, print.

Heavy modules (numpy, the models) are imported inside the command functions so that
``fabricsim --help`` starts fast; command modules import only typer at module level.
Every user error becomes one line on stderr and exit status 2, without a traceback.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import typer
import typer.main

from fabricsim.cli import (
    calibrate_cmd,
    catalog_cmd,
    collective_cmd,
    cost_cmd,
    goodput_cmd,
    infer_cmd,
    measure_cmd,
    plan_cmd,
    replay_cmd,
    report_cmd,
    serve_cmd,
    sweep_cmd,
    traffic_cmd,
    train_cmd,
    validate_cmd,
)
from fabricsim.cli.html_option import HTML_TARGET, split_html_option
from fabricsim.errors import FabricsimError

app = typer.Typer(
    name="fabricsim",
    help="Predict, explain and plan training and serving of very large models on GPU clusters."
    " Every command that prints a result also takes --html PATH: a self-contained HTML report of it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fabricsim")
    except PackageNotFoundError:  # a source tree on PYTHONPATH without an install
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"fabricsim {_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    """Predict, explain and plan training and serving of very large models on GPU clusters."""


app.command("collective", no_args_is_help=True)(collective_cmd.collective)
app.add_typer(catalog_cmd.app, name="catalog")
app.command("validate")(validate_cmd.validate)
app.command("traffic", no_args_is_help=True)(traffic_cmd.traffic)
app.command("sweep", no_args_is_help=True)(sweep_cmd.sweep)
app.command("train", no_args_is_help=True)(train_cmd.train)
app.add_typer(plan_cmd.app, name="plan")
app.command("infer", no_args_is_help=True)(infer_cmd.infer)
app.command("serve", no_args_is_help=True)(serve_cmd.serve)
app.command("goodput", no_args_is_help=True)(goodput_cmd.goodput)
app.add_typer(calibrate_cmd.app, name="calibrate")
app.command("report", no_args_is_help=True)(report_cmd.report)
app.add_typer(measure_cmd.app, name="measure")
app.command("replay", no_args_is_help=True)(replay_cmd.replay)
app.command("cost", no_args_is_help=True)(cost_cmd.cost)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@functools.cache
def _command() -> Any:
    """The click command tree of ``app``, built once per process (typer rebuilds it on every
    ``app()`` call: ~40 ms of signature inspection, paid per call by in-process callers and tests)."""
    return typer.main.get_command(app)


# Commands whose output is not a result payload: --html is refused rather than silently ignored.
HTML_FREE = {
    "report": "report writes its HTML with --out PATH",
    "measure": "measure writes its nccl-tests text with --out PATH; turn it into a result with 'calibrate nccl-tests'",
}


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and maps every user error to one stderr line and exit 2.
    ``--html PATH`` works on every command that prints a result (cli/html_option.py; not report, measure)."""
    token = None
    try:
        args, html = split_html_option(sys.argv[1:] if argv is None else list(argv))
        if html is not None:  # checked before the command runs, so a bad --html leaves no other output behind
            from fabricsim.io.results import check_output_path

            if args and args[0] in HTML_FREE:
                raise FabricsimError("html", f"'{args[0]}' prints no result to report", HTML_FREE[args[0]])

            check_output_path(html, "html")
        token = HTML_TARGET.set(html)
        _command().main(args=args, prog_name="fabricsim", standalone_mode=False)
    except FabricsimError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        return 130
    except typer.TyperException as exc:  # usage errors of typer's vendored click (typer >= 0.29)
        message = _one_line(exc.format_message())
        if message:  # empty when help was printed for a bare command
            print(f"error: {message}", file=sys.stderr)
        return 2
    finally:
        if token is not None:
            HTML_TARGET.reset(token)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
