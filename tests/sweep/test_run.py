"""Running sweeps: counts, skip-on-rerun, executor independence, and kill/resume exactly once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import sweep_fakes

from fabricsim.sweep import SweepOptions, Task, expand, open_store, parse_spec, run_sweep
from fabricsim.sweep.run import chunk_size

GPUS = (2, 3, 8, 16)  # 2 ops x 2 systems x 4 gpus x 2 sizes = 32 tasks; gpus == 3 fails
TOTAL = 32


def _tasks(gpus: tuple[int, ...] = GPUS) -> tuple[Task, ...]:
    return expand(parse_spec(sweep_fakes.grid_spec(gpus)), sweep_fakes.RUNNERS)


def _rows(db: Path) -> list[tuple]:
    with open_store(db) as store:
        return [tuple(getattr(o, f) for f in o.__slots__) for o in store.rows()]


def test_run_stores_every_task_and_a_rerun_skips_them(tmp_path):
    db = tmp_path / "s.sqlite"
    seen: list[tuple[int, int]] = []
    first = run_sweep(_tasks(), sweep_fakes.RUNNERS, SweepOptions(db, workers=2), lambda c, t: seen.append((c, t)))
    assert (first.tasks_total, first.tasks_done, first.tasks_failed, first.tasks_skipped) == (TOTAL, 24, 8, 0)
    assert seen[0] == (0, TOTAL) and seen[-1] == (TOTAL, TOTAL)
    again = run_sweep(_tasks(), sweep_fakes.RUNNERS, SweepOptions(db, workers=2, export_path=tmp_path / "o.csv"))
    assert (again.tasks_done, again.tasks_failed, again.tasks_skipped) == (0, 0, TOTAL)
    assert len((tmp_path / "o.csv").read_text().splitlines()) == TOTAL + 1
    assert len(_rows(db)) == TOTAL


def test_results_do_not_depend_on_worker_count_or_growing_the_grid(tmp_path):
    run_sweep(_tasks(), sweep_fakes.RUNNERS, SweepOptions(tmp_path / "one.sqlite", workers=1))
    run_sweep(_tasks((2, 3)), sweep_fakes.RUNNERS, SweepOptions(tmp_path / "two.sqlite", workers=2))
    grown = run_sweep(_tasks(), sweep_fakes.RUNNERS, SweepOptions(tmp_path / "two.sqlite", workers=2))
    assert grown.tasks_skipped == 16 and grown.tasks_done + grown.tasks_failed == 16
    assert _rows(tmp_path / "one.sqlite") == _rows(tmp_path / "two.sqlite")


def test_chunks_are_small_enough_to_balance_and_to_lose_little_on_a_kill():
    assert chunk_size(1, 8) == 1
    assert chunk_size(32, 2) == 2
    assert chunk_size(10**6, 2) == 16


DRIVER = """
import sys
import tempfile
from pathlib import Path
sys.path.insert(0, {here!r})
import pytest
import sweep_fakes
from fabricsim.sweep import SweepOptions, expand, parse_spec, run_sweep
tasks = expand(parse_spec(sweep_fakes.grid_spec({gpus!r})), sweep_fakes.RUNNERS)
run_sweep(tasks, sweep_fakes.RUNNERS, SweepOptions(Path({db!r}), workers=2))
"""


def _stored_count(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return con.execute("SELECT count(*) FROM results").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


def _start_slow_driver(db: Path) -> subprocess.Popen:
    env = {**os.environ, sweep_fakes.DELAY_ENV: "0.05"}  # 24 slow tasks on 2 workers: ~0.6 s of work
    code = DRIVER.format(here=str(sweep_fakes.HERE), gpus=GPUS, db=str(db))
    return subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)


def _kill_when_some_are_stored(proc: subprocess.Popen, db: Path, at_least: int) -> None:
    deadline = time.monotonic() + 30
    while _stored_count(db) < at_least and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its pool workers, mid-write or not
    proc.wait()


def test_a_sigkilled_sweep_resumes_with_every_task_exactly_once(tmp_path):
    db = tmp_path / "killed.sqlite"
    driver = _start_slow_driver(db)
    _kill_when_some_are_stored(driver, db, at_least=6)
    assert driver.returncode == -signal.SIGKILL
    stored_before = _stored_count(db)
    assert 6 <= stored_before < TOTAL, "the kill must land mid-way"

    resumed = run_sweep(_tasks(), sweep_fakes.RUNNERS, SweepOptions(db, workers=2))
    assert resumed.tasks_skipped == stored_before
    assert resumed.tasks_done + resumed.tasks_failed == TOTAL - stored_before

    run_sweep(_tasks(), sweep_fakes.RUNNERS, SweepOptions(tmp_path / "clean.sqlite", workers=2))
    rows = _rows(db)
    assert len(rows) == len({r[0] for r in rows}) == TOTAL
    assert rows == _rows(tmp_path / "clean.sqlite")
    assert all(json.loads(r[4])["gpus"] == json.loads(r[2])["gpus"] for r in rows if r[3] == "ok")


def _live_group_members(pgid: int) -> list[str]:
    """Processes of process group ``pgid`` that are not zombies (an orphan's zombie waits for init)."""
    members = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat_file.read_text()
        except OSError:  # ended meanwhile
            continue
        state, _ppid, group = text.rpartition(")")[2].split()[:3]
        if int(group) == pgid and state != "Z":
            members.append(f"{stat_file.parent.name} {text[:80]}")
    return members


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="lists processes through /proc (Linux)")
def test_workers_and_temp_folder_do_not_outlive_a_sigkilled_driver(tmp_path):
    """kill -9 of the driver alone (not its group): its pool workers, forkserver and resource tracker
    end, and its multiprocessing temp folder (pymp-*) goes; polled, no duration asserted."""
    # a short folder: the forkserver's socket lives in it, and AF_UNIX paths stop at 108 bytes
    # (pytest's tmp_path under xdist is longer than that with pymp-*/listener-* appended)
    temp = Path(tempfile.mkdtemp(prefix="fs-"))
    env = {**os.environ, sweep_fakes.DELAY_ENV: "0.5", "TMPDIR": str(temp)}
    code = DRIVER.format(here=str(sweep_fakes.HERE), gpus=GPUS, db=str(tmp_path / "orphans.sqlite"))
    driver = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while _stored_count(tmp_path / "orphans.sqlite") < 2 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert driver.poll() is None, "the driver must still be running when it is killed"
        assert list(temp.glob("pymp-*")), "the pool's temp folder exists while it runs"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 60  # a bound on waiting, not a speed claim
        while (_live_group_members(driver.pid) or list(temp.glob("pymp-*"))) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _live_group_members(driver.pid) == []
        assert list(temp.glob("pymp-*")) == []
    finally:
        if _live_group_members(driver.pid):
            os.killpg(driver.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
