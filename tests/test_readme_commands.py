"""The README's "What it answers" commands run when pasted (issue 15): each exits 0, in-process.

One test per table row; a row's backticked ``fabricsim ...`` commands run in order (a later one
may read what an earlier one wrote) from a scratch folder holding copies of the files the README
points at (``examples/``, ``tests/calibration/data/``) and, for ``replay``, the per-rank Chakra
traces the command names (written by the Chakra test's writer: a user brings their own).
``fabricsim validate`` is left to tests/validation, which runs the same suites; ``measure`` needs
the optional torch extra.

A row shows what its question asks (issue 27): every ``train``/``infer`` command's layout fits and
every ``plan`` command finds plans that fit, unless the row says in words that it does not fit
(:data:`UNFIT_WORDS`) and why.
"""

import importlib.util
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from fabricsim.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"fabricsim validate"}
COPIED = ("examples", "tests/calibration/data")
FIT_CHECKED = ("train", "infer", "plan")  # subcommands whose result says whether the layout fits
UNFIT_WORDS = "does not fit"  # a row that shows a layout that does not fit says so (and why)


def _table_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## What it answers", 1)[1].split("\n\n", 2)[1]
    return table.splitlines()[2:]


def readme_rows() -> list[tuple[str, list[str]]]:
    """(question, commands) of every row of the table."""
    rows = []
    for line in _table_lines():
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


def fit_checked_rows() -> list[tuple[str, list[str]]]:
    """(question, train/infer/plan commands) of the rows that do not say their layout does not fit."""
    rows = []
    for line in _table_lines():
        question, _, rest = line.strip("|").partition("|")
        if UNFIT_WORDS in rest:
            continue
        found = [c.replace("\\|", "|") for c in re.findall(r"`(fabricsim [^`]+)`", rest)]
        commands = [c for c in found if c.split()[1] in FIT_CHECKED and "--help" not in c.split()]
        if commands:
            rows.append((question.strip(), commands))
    return rows


def _fits(out: dict) -> bool:
    if "plans" in out:  # a plan: it found layouts, and each of them fits
        return bool(out["plans"]) and all(plan.get("fits", True) for plan in out["plans"])
    return bool(out["fits"])


def test_the_fit_check_covers_the_layout_rows() -> None:
    checked = [c for _, row in fit_checked_rows() for c in row]
    assert sum(c.startswith("fabricsim train") for c in checked) >= 4
    assert any(c.startswith("fabricsim infer") for c in checked)
    assert sum(c.startswith("fabricsim plan") for c in checked) >= 2


@pytest.mark.parametrize(("question", "commands"), fit_checked_rows(), ids=[q[:40] for q, _ in fit_checked_rows()])
def test_readme_row_layout_fits(question: str, commands: list[str], tmp_path, monkeypatch, capsys) -> None:
    """A README row's layout fits (issue 27: the MoE and offload rows printed "fits: NO", exit 0)."""
    monkeypatch.chdir(tmp_path)  # the row's output files (--trace, --html) land here
    for command in commands:
        capsys.readouterr()
        rc = main([*shlex.split(command)[1:], "--json"])
        out = capsys.readouterr().out
        assert rc == 0, command
        assert _fits(json.loads(out)), (question, command)
