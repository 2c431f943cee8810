"""The ``fabricsim`` command line (layer L11): parse, call :mod:`fabricsim.api`, print.

Heavy modules (numpy, the models) are imported inside the command functions so that
``fabricsim --help`` starts fast; command modules import only typer at module level.
Every user error becomes one line on stderr and exit status 2, without a traceback.
"""

from __future__ import annotations

import functools
import gc
import importlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import typer
import typer.main

from fabricsim.cli.html_option import HTML_TARGET, split_html_option
from fabricsim.errors import FabricsimError


def _root_app() -> typer.Typer:
    """A new Typer app with the root options (``--version``) and no sub-command yet."""
    root = typer.Typer(
        name="fabricsim",
        help="Predict, explain and plan training and serving of very large models on GPU clusters."
        " Every command that prints a result also takes --html PATH: a self-contained HTML report of it.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    root.callback()(_root)
    return root


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


def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    """Predict, explain and plan training and serving of very large models on GPU clusters."""


# The commands in the order ``fabricsim --help`` lists them: (name, module in fabricsim.cli, its
# command function or sub-Typer ``app``, no_args_is_help). A run imports and builds only the
# command it runs (start-up time, issue 27): building all of them costs ~70 ms of signature
# inspection, and their modules' imports more.
SUBCOMMANDS: tuple[tuple[str, str, str, bool], ...] = (
    ("collective", "collective_cmd", "collective", True),
    ("validate", "validate_cmd", "validate", False),
    ("traffic", "traffic_cmd", "traffic", True),
    ("sweep", "sweep_cmd", "sweep", True),
    ("train", "train_cmd", "train", True),
    ("infer", "infer_cmd", "infer", True),
    ("serve", "serve_cmd", "serve", True),
    ("cluster", "cluster_cmd", "cluster", True),
    ("goodput", "goodput_cmd", "goodput", True),
    ("report", "report_cmd", "report", True),
    ("replay", "replay_cmd", "replay", True),
    ("cost", "cost_cmd", "cost", True),
    ("warmup", "warmup_cmd", "warmup", False),
    ("catalog", "catalog_cmd", "app", False),  # groups last, as typer lists them
    ("plan", "plan_cmd", "app", False),
    ("calibrate", "calibrate_cmd", "app", False),
    ("measure", "measure_cmd", "app", False),
)


def _register(target: typer.Typer, name: str, module: str, attribute: str, no_args_is_help: bool) -> None:
    """Register one sub-command on ``target`` (imports its module)."""
    command = getattr(importlib.import_module(f"fabricsim.cli.{module}"), attribute)
    if isinstance(command, typer.Typer):  # a group of commands (catalog, plan, ...)
        target.add_typer(command, name=name)
    else:
        target.command(name, no_args_is_help=no_args_is_help)(command)


def _full_app() -> typer.Typer:
    """The Typer app with every command registered (for ``typer.testing.CliRunner`` and tools)."""
    full = _root_app()
    for entry in SUBCOMMANDS:
        _register(full, *entry)
    return full


@functools.cache
def _subcommand(name: str) -> Any:
    """The click command of one sub-command, built exactly as typer builds it inside the full
    tree: a root app holding only that command, turned into its click group."""
    alone = _root_app()
    _register(alone, *next(entry for entry in SUBCOMMANDS if entry[0] == name))
    return typer.main.get_group(alone).commands[name]


class _LazyCommands(Mapping[str, Any]):
    """The root group's sub-commands, each built on first use; ``--help`` (which lists them
    all) builds every one, a run builds one."""

    def __getitem__(self, name: str) -> Any:
        if not any(entry[0] == name for entry in SUBCOMMANDS):
            raise KeyError(name)
        return _subcommand(name)

    def __iter__(self) -> Iterator[str]:
        return (entry[0] for entry in SUBCOMMANDS)

    def __len__(self) -> int:
        return len(SUBCOMMANDS)


def __getattr__(name: str) -> Any:  # PEP 562: ``from fabricsim.cli.app import app`` gets the full app
    if name == "app":
        return _app()
    raise AttributeError(name)


@functools.cache
def _app() -> typer.Typer:
    return _full_app()


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


@functools.cache
def _command() -> Any:
    """The click command tree, built once per process (typer rebuilds it on every ``app()`` call:
    signature inspection, paid per call by in-process callers and tests); its sub-commands are
    built when first looked up (:class:`_LazyCommands`)."""
    group = typer.main.get_group(_root_app())
    group.commands = _LazyCommands()
    return group


# Young-generation size of the garbage collector in a CLI process (CPython's default: 700). A JSON
# train's start-up (imports, whose objects live to the end of the process) allocates some 60,000
# container objects (gc.get_count() after one run); with 700 the collector traversed them in ~90
# young and middle collections, about a tenth of the run's CPU. A long simulation still collects
# after every 100,000 net allocations.
PROCESS_GC_THRESHOLD = 100_000

# Commands whose output is not a result payload: --html is refused rather than silently ignored.
HTML_FREE = {
    "report": "report writes its HTML with --out PATH",
    "measure": "measure writes its nccl-tests text with --out PATH; turn it into a result with 'calibrate nccl-tests'",
    "warmup": "warmup prints what it compiled, not a result",
}


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and maps every user error to one stderr line and exit 2.
    ``--html PATH`` works on every command that prints a result (cli/html_option.py; not report, measure).

    Without ``argv`` (the console script, ``python -m fabricsim.cli.app``) the run is the whole
    process, and the garbage collector is tuned for it (issue 27; in-process callers pass ``argv``
    and are left alone): its young generation holds :data:`PROCESS_GC_THRESHOLD` objects, and at the
    end the objects still alive are frozen out of it (``gc.freeze``), so that the interpreter's exit
    does not traverse them all again in its final collections (a fifth of a JSON ``train``'s CPU);
    pydantic's plugin discovery is skipped unless ``PYDANTIC_DISABLE_PLUGINS`` is set."""
    if argv is None:
        threshold = gc.get_threshold()
        gc.set_threshold(max(threshold[0], PROCESS_GC_THRESHOLD), *threshold[1:])
        # pydantic looks for plugins of other packages (entry points: a scan of every installed
        # distribution, ~4 ms) before its first model; fabricsim's own validation wants none. A user
        # who sets the variable (even empty) keeps pydantic's behaviour.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    code = _run(argv)
    if argv is None:
        gc.freeze()
    return code


def _run(argv: list[str] | None) -> int:
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
        if not message:  # help was printed for a bare command: asked for nothing else, as --help
            return 0
        print(f"error: {message}", file=sys.stderr)
        return 2
    finally:
        if token is not None:
            HTML_TARGET.reset(token)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
