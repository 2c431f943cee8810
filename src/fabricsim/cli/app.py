"""The ``fabricsim`` command line (layer L11): parse, call :mod:`fabricsim.api`, print.

A run of an analytic ``train`` with plain options takes the fast path (:mod:`fabricsim.cli.fastpath`):
its arguments are read from a table that a test holds equal to the typer command's options, without
importing typer; every other run (help, usage errors, other commands) goes through the typer tree
(:mod:`fabricsim.cli.tree`), imported only then. Heavy modules (numpy, the models) are imported
inside the command functions so that ``fabricsim --help`` starts fast. Every user error becomes one
line on stderr and exit status 2, without a traceback.
"""

from __future__ import annotations

import gc
import os
import sys
from importlib import import_module
from typing import Any

from fabricsim.cli import fastpath
from fabricsim.cli.html_option import HTML_TARGET, split_html_option
from fabricsim.errors import FabricsimError

# names of the typer tree (fabricsim.cli.tree) reachable here, as before it moved there: importing
# this module (the console script's entry point) must not import typer
_TREE_NAMES = {"app": "_app", "SUBCOMMANDS": "SUBCOMMANDS", "_command": "_command", "_subcommand": "_subcommand",
               "_full_app": "_full_app", "_root_app": "_root_app"}


def __getattr__(name: str) -> Any:  # PEP 562: ``from fabricsim.cli.app import app`` gets the full app
    if name not in _TREE_NAMES:
        raise AttributeError(name)
    value = getattr(import_module("fabricsim.cli.tree"), _TREE_NAMES[name])
    return value() if name == "app" else value


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


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
        if html is None:
            code = fastpath.run(args)
            if code is not None:
                return code
        else:  # checked before the command runs, so a bad --html leaves no other output behind
            from fabricsim.io.results import check_output_path

            if args and args[0] in HTML_FREE:
                raise FabricsimError("html", f"'{args[0]}' prints no result to report", HTML_FREE[args[0]])

            check_output_path(html, "html")
        token = HTML_TARGET.set(html)
        from fabricsim.cli import tree

        return tree.run(args)
    except FabricsimError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        if token is not None:
            HTML_TARGET.reset(token)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
