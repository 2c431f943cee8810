"""Sweep throughput: tasks/s of real collective tasks, in-process vs local process pool vs Ray.

Run: python benchmarks/bench_sweep.py [--workers 2] [--ray]
Prints per executor: a cold run (including pool / Ray start-up) and a warm run (forkserver already
up / Ray already running) into fresh SQLite stores, then a resume of the finished store; the stores
of all runs are checked to hold identical rows.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from fabricsim import api
from fabricsim.sweep import ExecutorKind, SweepOptions, expand, open_store, parse_spec, run_sweep, run_task

GRID = {
    "op": ["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast"],
    "system": ["dgx-a100", "dgx-h100", "dgx-b200"],
    "gpus": [8, 16, 64, 256, 1024, 4096],
    "size": ["4KiB", "64KiB", "256KiB", "1MiB", "4MiB", "16MiB", "64MiB", "256MiB", "1GiB", "2GiB", "4GiB", "8GiB"],
    "algorithm": ["auto", "ring"],
}


def _rows(db: Path) -> list:
    with open_store(db) as store:
        return store.rows()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray", action="store_true", help="also run on a local Ray instance (started here)")
    args = parser.parse_args()
    runners = api.sweep_runners()
    tasks = expand(parse_spec({"tasks": [{"kind": "collective", "grid": GRID}]}), runners)
    folder = Path(tempfile.mkdtemp(prefix="bench-sweep-"))

    started = time.perf_counter()
    for task in tasks:
        run_task(runners, task)
    serial_s = time.perf_counter() - started
    print(f"in-process (no store)  {len(tasks)} tasks  {serial_s:7.3f} s  {len(tasks) / serial_s:9.1f} tasks/s")

    kinds = [ExecutorKind.LOCAL] + ([ExecutorKind.RAY] if args.ray else [])
    stores = []
    for kind in kinds:
        if kind is ExecutorKind.RAY:
            import ray  # optional: started here once so the warm run joins it

            started = time.perf_counter()
            ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
            print(f"ray start-up {time.perf_counter() - started:.3f} s")
        for label in ("cold", "warm"):
            db = folder / f"{kind.value}-{label}.sqlite"
            summary = run_sweep(tasks, runners, SweepOptions(db, kind, args.workers))
            rate = len(tasks) / summary.elapsed_s
            print(
                f"{kind.value:5s} x{args.workers} {label}  {len(tasks)} tasks  {summary.elapsed_s:7.3f} s  "
                f"{rate:8.1f} tasks/s  (ok {summary.tasks_done}, failed {summary.tasks_failed})"
            )
            stores.append(db)
        rerun = run_sweep(tasks, runners, SweepOptions(db, kind, args.workers))
        print(f"{kind.value:5s} resume of a finished sweep: {rerun.tasks_skipped} skipped in {rerun.elapsed_s:.3f} s")
    print(f"all stores identical: {all(_rows(db) == _rows(stores[0]) for db in stores)}")


if __name__ == "__main__":
    main()
