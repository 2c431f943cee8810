"""The README's "What it answers" commands run when pasted (issue 15): each exits 0, in-process.

One test per table row; a row's backticked ``fabricsim ...`` commands run in order (a later one
may read what an earlier one wrote) from a scratch folder holding copies of the files the README
points at (``examples/``, ``tests/calibration/data/``) and, for ``replay``, the per-rank Chakra
traces the command names (written by the Chakra test's writer: a user brings their own).
``fabricsim validate`` is left to tests/validation, which runs the same suites; ``measure`` needs
the optional torch extra.
"""

import importlib.util
import re
import shlex
import shutil
from pathlib import Path

import pytest

from fabricsim.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"fabricsim validate"}
COPIED = ("examples", "tests/calibration/data")


def readme_rows() -> list[tuple[str, list[str]]]:
    """(question, commands) of every row of the table."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## What it answers", 1)[1].split("\n\n", 2)[1]
    rows = []
    for line in table.splitlines()[2:]:
        question, _, rest = line.strip("|").partition("|")
        # a table cell escapes "|" as "\|"; the rendered page (what is pasted) shows "|"
        found = [c.replace("\\|", "|") for c in re.findall(r"`(fabricsim [^`]+)`", rest)]
        commands = [c for c in found if c not in SKIPPED]
        if commands:
            rows.append((question.strip(), commands))
    return rows


def test_the_table_has_no_placeholders() -> None:
    commands = [c for _, row in readme_rows() for c in row]
    assert len(commands) >= 14
    assert not [c for c in commands if "..." in c or "[" in c or "<" in c]


def _setup(folder: Path, commands: list[str]) -> None:
    for relative in COPIED:
        shutil.copytree(ROOT / relative, folder / relative)
    if any(c.startswith("fabricsim replay") for c in commands):
        from tests.workload.test_chakra import _write

        _write(folder)  # trace.0.et ... trace.3.et
    if any(c.startswith("fabricsim measure") for c in commands) and importlib.util.find_spec("torch") is None:
        pytest.skip("fabricsim measure needs the optional torch extra: pip install -e '.[measure]'")


@pytest.mark.parametrize(("question", "commands"), readme_rows(), ids=[q[:40] for q, _ in readme_rows()])
def test_readme_row_runs(question: str, commands: list[str], tmp_path, monkeypatch, capsys) -> None:
    _setup(tmp_path, commands)
    monkeypatch.chdir(tmp_path)
    for command in commands:
        rc = main(shlex.split(command)[1:])  # exactly as pasted (a table, not --json)
        assert rc == 0, (command, capsys.readouterr().err)
