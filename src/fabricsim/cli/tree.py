"""The typer command tree of ``fabricsim`` (layer L11): every command as typer builds it.

:func:`fabricsim.cli.app.main` comes here for every run its fast path (:mod:`fabricsim.cli.fastpath`)
does not take: help, errors of usage, the commands without a fast path. Importing typer costs some
40 ms of a whole process's ~0.2 s CPU, and its parsing builds a pydantic adapter per option, so
this module is imported only when it is needed (issue 27).
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import typer
import typer.main

from fabricsim.cli.app import _one_line


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


@functools.cache
def _app() -> typer.Typer:
    return _full_app()


@functools.cache
def _command() -> Any:
    """The click command tree, built once per process (typer rebuilds it on every ``app()`` call:
    signature inspection, paid per call by in-process callers and tests); its sub-commands are
    built when first looked up (:class:`_LazyCommands`)."""
    group = typer.main.get_group(_root_app())
    group.commands = _LazyCommands()
    return group


def run(args: list[str]) -> int:
    """Run ``args`` through the typer tree; typer's own exits and usage errors become an exit
    status (and one ``error:`` line); a :class:`~fabricsim.errors.FabricsimError` propagates to
    :func:`fabricsim.cli.app.main`, which prints it."""
    try:
        # a command returns None; typer returns an exit status it chose itself (130 for Ctrl-C)
        status = _command().main(args=args, prog_name="fabricsim", standalone_mode=False)
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
    return status if isinstance(status, int) else 0
