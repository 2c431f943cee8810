"""The README's "What it answers" commands run when pasted (issue 15): each exits 0, in-process.

Every backticked ``fabricsim ...`` command of that table is run from a scratch folder holding a
copy of ``examples/`` (so files they write, such as ``step.json``, land there). ``fabricsim
validate`` is left to tests/validation, which runs the same suites.
"""

import re
import shlex
import shutil
from pathlib import Path

import pytest

from fabricsim.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"fabricsim validate"}


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## What it answers", 1)[1].split("\n\n", 2)[1]
    return [c for c in re.findall(r"`(fabricsim [^`]+)`", table) if c not in SKIPPED]


def test_the_table_has_no_placeholders() -> None:
    commands = readme_commands()
    assert len(commands) >= 10
    assert not [c for c in commands if "..." in c or "[" in c or "<" in c]


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs(command: str, tmp_path, monkeypatch, capsys) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)[1:]
    assert main(argv) == 0, capsys.readouterr().err  # exactly as pasted (a table, not --json)
