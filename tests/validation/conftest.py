"""Shared by the validation tests: run a row's ``fabricsim ... --json`` command in-process."""

import contextlib
import io
import json
import shlex
from collections.abc import Callable

import pytest

from fabricsim.cli.app import main


def _run(command: str) -> dict:
    argv = shlex.split(command)
    assert argv[0] == "fabricsim" and "--json" in argv
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv[1:])
    assert status == 0, err.getvalue()
    return json.loads(out.getvalue())


@pytest.fixture
def run_json() -> Callable[[str], dict]:
    """``run_json("fabricsim ... --json")``: the command's JSON output (it must exit 0)."""
    return _run
