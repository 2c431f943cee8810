"""The CLI fuzz tests at scale, with the hang detection the tests leave out (issues 15 and 27).

Runs every ``tests/cli/test_fuzz*.py`` file with ``EXAMPLES`` cases per property (default 3,000),
under pytest, with this module loaded as a pytest plugin (``-p fuzz_cli``). The plugin wraps the
CLI's in-process entry point ``fabricsim.cli.app.main`` and records every case it runs: the file,
the arguments, the exit status, the seconds it took, whether a traceback escaped or was printed,
and how many ``error:`` lines a refusal printed. A case still running after ``SLOW_CASE_S`` is
reported at once (so a hang is named while it hangs), and again in the summary with the cases that
finished over it. The tests assert correctness; time is judged only here.

Prints, per file and in total: cases, refusals (exit 2), tracebacks, refusals not on exactly one
``error:`` line, and cases over ``SLOW_CASE_S``. Exit status 0 only when pytest passed and no case
had a traceback or ran over ``SLOW_CASE_S``. A file whose cases do not go through ``main`` in the
test process (e.g. subprocesses) shows 0 recorded cases; its pytest result still counts.

Run: ``python benchmarks/fuzz_cli.py [EXAMPLES] [--workers N]`` (``--help`` says more).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SLOW_CASE_S = 60.0  # issue 27: "0 hangs over 60 s"
RECORD_ENV = "FABRICSIM_FUZZ_RECORD"  # the folder the plugin writes its records to
POLL_S = 2.0  # how often the driver looks for reports of slow cases while pytest runs
WARM_UP = ["warmup"]  # compiles or loads the packet kernel before any case is timed

# ---------------------------------------------------------------- the pytest plugin (in each worker)

_current_test = ""


class _Tee:
    """A stream that copies what is written to it (the case's stderr) and passes it on."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.target.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def _record(folder: Path, record: dict[str, Any]) -> None:
    with open(folder / f"cases-{os.getpid()}.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def _recording(original: Any, folder: Path) -> Any:
    def main(argv: list[str] | None = None) -> int:
        words = [str(word)[:200] for word in (argv or [])]
        case = {"test": _current_test, "argv": words}
        timer = threading.Timer(SLOW_CASE_S, _record, (folder, {**case, "event": "slow"}))
        timer.daemon = True
        tee = _Tee(sys.stderr)
        sys.stderr = tee
        start = time.perf_counter()
        rc: int | None = None
        escaped = None
        timer.start()
        try:
            rc = original(argv)
            return rc
        except BaseException as exc:
            escaped = type(exc).__name__
            raise
        finally:
            elapsed = time.perf_counter() - start
            timer.cancel()
            sys.stderr = tee.target
            err = "".join(tee.parts)
            _record(folder, {
                **case, "event": "done", "rc": rc, "elapsed_s": elapsed, "escaped": escaped,
                "traceback": escaped is not None or "Traceback" in err,
                "error_lines": sum(line.startswith("error: ") for line in err.splitlines()),
            })

    return main


def pytest_configure(config: Any) -> None:
    """Wrap ``fabricsim.cli.app.main`` before the fuzz modules import it."""
    folder = os.environ.get(RECORD_ENV)
    if not folder:
        return
    import fabricsim.cli.app as app

    if not getattr(app.main, "_fuzz_recorded", False):
        app.main = _recording(app.main, Path(folder))
        app.main._fuzz_recorded = True  # type: ignore[attr-defined]


def pytest_runtest_setup(item: Any) -> None:
    global _current_test
    _current_test = item.nodeid


# ---------------------------------------------------------------- the driver


def _read(folder: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted(folder.glob("cases-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(json.JSONDecodeError):  # a line being written
                records.append(json.loads(line))
    return records


def _file(test: str) -> str:
    return test.split("::")[0] or "(outside a test)"


def _summary(records: list[dict[str, Any]], files: list[str]) -> tuple[int, int]:
    done = [r for r in records if r["event"] == "done"]
    finished = {(r["test"], tuple(r["argv"])) for r in done}
    stuck = [r for r in records if r["event"] == "slow" and (r["test"], tuple(r["argv"])) not in finished]
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for name in files:
        rows[name]["cases"] += 0  # a row even when nothing was recorded
    for r in done:
        row = rows[_file(r["test"])]
        row["cases"] += 1
        row["refused"] += r["rc"] == 2
        row["tracebacks"] += bool(r["traceback"]) or r["rc"] not in (0, 2)
        row["not_one_line"] += r["rc"] == 2 and r["error_lines"] != 1
        row["over_60_s"] += r["elapsed_s"] > SLOW_CASE_S
    print(f"{'file':45} {'cases':>8} {'refused':>8} {'tracebacks':>10} {'not 1 line':>10} {'>60 s':>6}")
    total: dict[str, int] = defaultdict(int)
    for name in sorted(rows):
        row = rows[name]
        print(f"{name:45} {row['cases']:8,} {row['refused']:8,} {row['tracebacks']:10} {row['not_one_line']:10}"
              f" {row['over_60_s']:6}")
        for key, value in row.items():
            total[key] += value
    print(f"{'total':45} {total['cases']:8,} {total['refused']:8,} {total['tracebacks']:10}"
          f" {total['not_one_line']:10} {total['over_60_s']:6}")
    for r in sorted(done, key=lambda r: -r["elapsed_s"]):
        if r["elapsed_s"] <= SLOW_CASE_S:
            break
        print(f"over {SLOW_CASE_S:.0f} s: {r['elapsed_s']:.1f} s  fabricsim {' '.join(r['argv'])}  ({r['test']})")
    for r in stuck:
        print(f"still running after {SLOW_CASE_S:.0f} s when pytest ended: fabricsim {' '.join(r['argv'])}")
    for r in [r for r in done if r["rc"] == 2 and r["error_lines"] != 1][:10]:
        bare = " (a bare command prints its help and exits 2)" if len(r["argv"]) <= 1 else ""
        print(f"refused on {r['error_lines']} error: lines{bare}: fabricsim {' '.join(r['argv'])}  ({r['test']})")
    for r in done:
        if r["traceback"] or r["rc"] not in (0, 2):
            print(f"traceback ({r['escaped'] or 'printed'}, exit {r['rc']}): fabricsim {' '.join(r['argv'])}")
    return total["tracebacks"], total["over_60_s"] + len(stuck)


def _arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="?", type=int, default=3000, help="cases per property (default 3000)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (0: none; default 2)")
    args = parser.parse_args(argv)
    if args.examples < 1 or args.workers < 0:
        parser.error("EXAMPLES must be at least 1 and --workers at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    examples = args.examples
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "cli").glob("test_fuzz*.py"))
    with tempfile.TemporaryDirectory(prefix="fuzz-record-") as folder:
        env = {**os.environ, "FABRICSIM_FUZZ_EXAMPLES": str(examples), RECORD_ENV: folder}
        paths = [str(ROOT / "src"), str(ROOT / "benchmarks"), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
        argv = [sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider", "-p", "fuzz_cli"]
        argv += ["-n", str(args.workers)] if args.workers else ["-p", "no:xdist"]
        print(f"fuzz: {len(files)} files, {examples} examples per property: {' '.join(files)}", flush=True)
        # the packet kernel's first compile (minutes on a busy machine) must not count as a slow case
        subprocess.run([sys.executable, "-m", "fabricsim.cli.app", *WARM_UP], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env)
        reported: set[tuple[str, ...]] = set()
        while proc.poll() is None:
            time.sleep(POLL_S)
            for r in _read(Path(folder)):
                key = (r["test"], *r["argv"])
                if r["event"] == "slow" and key not in reported:
                    reported.add(key)
                    print(f"fuzz: still running after {SLOW_CASE_S:.0f} s: fabricsim {' '.join(r['argv'])}", flush=True)
        elapsed = time.perf_counter() - start
        tracebacks, slow = _summary(_read(Path(folder)), files)
    print(f"fuzz: pytest exit {proc.returncode} in {elapsed:.0f} s; {tracebacks} tracebacks, {slow} cases over"
          f" {SLOW_CASE_S:.0f} s")
    return 0 if proc.returncode == 0 and tracebacks == 0 and slow == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
