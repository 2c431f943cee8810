"""``fabricsim sweep``: JSON summary, resume by rerun, export, and one-line errors with exit 2."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fabricsim.cli.app import main

GRID = "{op: [all-reduce, all-gather], system: [dgx-a100, dgx-h100], gpus: [8, 16], size: [1MiB, 1GiB]}"


def _spec(tmp_path: Path, body: str) -> str:
    path = tmp_path / "spec.yaml"
    path.write_text(body)
    return str(path)


def _good(tmp_path: Path) -> str:
    return _spec(tmp_path, f"name: cli\ntasks:\n  - kind: collective\n    grid: {GRID}\n")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_sweep_json_then_rerun_skips_everything_and_exports(tmp_path, capsys):
    db = str(tmp_path / "r.sqlite")
    assert main(["sweep", _good(tmp_path), "--db", db, "--workers", "2", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["tasks_total"], first["tasks_done"], first["tasks_skipped"], first["tasks_failed"]) == (16, 16, 0, 0)
    out_csv = tmp_path / "r.csv"
    assert main(["sweep", _good(tmp_path), "--db", db, "--export", str(out_csv), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["tasks_done"], again["tasks_skipped"], again["export"]) == (0, 16, str(out_csv))
    lines = out_csv.read_text().splitlines()
    assert len(lines) == 17 and lines[0].startswith("task_id,kind,status,error,param.algorithm")


def test_sweep_table_and_failed_tasks_are_rows_not_crashes(tmp_path, capsys):
    spec = _spec(
        tmp_path,
        "tasks:\n  - kind: collective\n    list:\n"
        "      - {op: all-reduce, system: dgx-h100, gpus: 8, size: 1GiB}\n"
        "      - {op: all-reduce, system: no-such-system, gpus: 8, size: 1GiB}\n",
    )
    assert main(["sweep", spec, "--db", str(tmp_path / "t.sqlite"), "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "skipped (already stored)" in out and "failed" in out
    assert main(["sweep", spec, "--db", str(tmp_path / "t.sqlite"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tasks_skipped"] == 2


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("tasks:\n  - kind: collective\n    grid: {}\n", "tasks[0].grid: empty grid"),
        ("tasks:\n  - kind: collective\n    grid: {gpus: []}\n", "tasks[0].grid.gpus: empty list"),
        ("tasks:\n  - kind: collective\n    gird: {gpus: 8}\n", "tasks[0].gird: unknown key"),
        (f"tasks:\n  - kind: collective\n    grid: {GRID[:-1]}, gpu: 8}}\n", "tasks[0].grid.gpu: unknown parameter"),
        ("tasks: []\nextra: 1\n", "extra: unknown key"),
    ],
)
def test_bad_specs_are_one_line_errors_with_exit_2(tmp_path, capsys, body, words):
    assert main(["sweep", _spec(tmp_path, body), "--db", str(tmp_path / "x.sqlite")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_bad_options_are_one_line_errors(tmp_path, capsys):
    good = _good(tmp_path)
    for extra, words in (
        (["--executor", "dask"], "unknown executor"),
        (["--workers", "0"], "workers: must be a positive integer"),
        (["--export", str(tmp_path / "o.xlsx")], "unknown format"),
        (["--executor", "ray", "--address", f"127.0.0.1:{_closed_port()}"], "unreachable"),
    ):
        assert main(["sweep", good, "--db", str(tmp_path / "o.sqlite"), *extra]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1


def _console_script() -> str:
    script = Path(sys.executable).with_name("fabricsim")
    return str(script) if script.exists() else shutil.which("fabricsim") or "fabricsim"


def test_console_script_unreachable_ray_address_exit_2_one_line(tmp_path):
    args = [
        "sweep",
        _good(tmp_path),
        "--db",
        str(tmp_path / "u.sqlite"),
        "--executor",
        "ray",
        "--address",
        f"127.0.0.1:{_closed_port()}",
    ]
    result = subprocess.run([_console_script(), *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "error: address: Ray cluster at 127.0.0.1:" in result.stderr


def test_progress_bar_callback_is_off_for_json_or_pipes_and_counts_when_on(capsys):
    from fabricsim.cli.progress import progress_bar

    with progress_bar("sweep", False) as update:
        assert update is None
    with progress_bar("sweep", True) as update:  # stderr is not a terminal under pytest: off too
        assert update is None
    assert capsys.readouterr().out == ""  # the bar is drawn on stderr only


AXIS = "[" + ", ".join(str(2 + i) for i in range(200)) + "]"
HUGE_GRID = f"tasks:\n  - kind: collective\n    grid: {{op: all-reduce, system: dgx-h100, gpus: {AXIS}, size: {AXIS}, "
HUGE_GRID += f"algorithm: {AXIS}}}\n"  # 200^3 = 8 x 10^6 tasks: the hang


def test_a_huge_grid_is_refused_before_it_is_expanded(tmp_path, capsys):
    assert main(["sweep", _spec(tmp_path, HUGE_GRID), "--db", str(tmp_path / "h.sqlite")]) == 2
    err = capsys.readouterr().err
    assert err == "error: spec tasks: 8000000 exceeds the cap 1000000 (set FABRICSIM_MAX_SWEEP_TASKS to raise it)\n"
    assert not (tmp_path / "h.sqlite").exists()


@pytest.mark.parametrize("target", ["notes.txt", "folder", "missing/s.sqlite"])
def test_a_bad_db_is_refused_before_the_spec_is_expanded(tmp_path, capsys, monkeypatch, target):
    from fabricsim import sweep as sweeps

    (tmp_path / "notes.txt").write_text("not a database\n")
    (tmp_path / "folder").mkdir()

    def never(*args, **kwargs):
        raise AssertionError("the spec was expanded before --db was checked")

    monkeypatch.setattr(sweeps, "expand", never)
    assert main(["sweep", _spec(tmp_path, HUGE_GRID), "--db", str(tmp_path / target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: db: ") and err.count("\n") == 1, err
    assert (tmp_path / "notes.txt").read_text() == "not a database\n"
