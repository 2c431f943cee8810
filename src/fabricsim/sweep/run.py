"""Run a sweep (layer L8): skip stored tasks, execute the rest, store each result as it arrives.

Flow: ``tasks`` (from :func:`fabricsim.sweep.tasks.expand`) minus the ids already in the store are cut
into small chunks and handed to an executor; every outcome is committed to the store the moment its
chunk returns. A killed run therefore restarts where it stopped: finished tasks are skipped, tasks
that were in flight run again, and the primary key guarantees each task is stored exactly once.
Because a task's row is a pure function of the task, the final store (read in task-id order) is the
same whatever the executor, worker count, completion order or number of interruptions.

A user error inside a task (:class:`FabricsimError`, e.g. a layout that does not divide the GPUs) is
stored as a failed row with its one-line message. Any other exception is a bug: it stops the sweep
with its traceback; the rows stored so far stay, and a rerun resumes after the fix.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from fabricsim.metrics import SweepSummary
from fabricsim.sweep.executors import ExecutorKind, LocalExecutor, RayExecutor, make_executor
from fabricsim.sweep.export import check_export, export_results
from fabricsim.sweep.store import ResultStore, check_store, open_store
from fabricsim.sweep.tasks import STATUS_FAILED, RunnerRegistry, Task, run_chunk

CHUNKS_PER_WORKER = 8  # enough chunks to balance uneven task times across workers
MAX_CHUNK_TASKS = 16  # bounds the work lost (re-run) when a sweep is killed, and the progress step

Progress = Callable[[int, int], None]


def default_workers() -> int:
    """CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class SweepOptions:
    """How to run a sweep: store path, executor, worker count, Ray address, optional export file."""

    db_path: Path
    executor: ExecutorKind = ExecutorKind.LOCAL
    workers: int = 1
    address: str | None = None
    export_path: Path | None = None


def check_options(options: SweepOptions) -> None:
    """Check the store and export paths without writing anything (before a spec is expanded)."""
    check_store(options.db_path)
    if options.export_path is not None:
        check_export(options.export_path)


def chunk_size(tasks: int, workers: int) -> int:
    """Tasks per executor call: ~CHUNKS_PER_WORKER chunks per worker, at most MAX_CHUNK_TASKS."""
    return max(1, min(MAX_CHUNK_TASKS, math.ceil(tasks / (workers * CHUNKS_PER_WORKER))))


def _chunks(tasks: Sequence[Task], size: int) -> Iterator[tuple[Task, ...]]:
    for start in range(0, len(tasks), size):
        yield tuple(tasks[start : start + size])


@dataclass(slots=True)
class _Counts:
    done: int = 0
    failed: int = 0
    skipped: int = 0


def _execute(
    todo: Sequence[Task],
    runners: RunnerRegistry,
    executor: LocalExecutor | RayExecutor,
    store: ResultStore,
    advance: Callable[[int], None],
) -> _Counts:
    counts = _Counts()
    work = partial(run_chunk, dict(runners))
    with executor:
        for outcomes in executor.map_unordered(work, _chunks(todo, chunk_size(len(todo), executor.workers))):
            for outcome in outcomes:
                if not store.add(outcome):
                    counts.skipped += 1  # stored meanwhile by another sweep on the same store
                elif outcome.status == STATUS_FAILED:
                    counts.failed += 1
                else:
                    counts.done += 1
            advance(len(outcomes))
    return counts


def run_sweep(
    tasks: Sequence[Task], runners: RunnerRegistry, options: SweepOptions, on_progress: Progress | None = None
) -> SweepSummary:
    """Run every task not yet in the store at ``options.db_path``; export when asked.

    ``on_progress(completed, total)`` is called once before work starts and after every chunk, where
    ``completed`` counts tasks skipped as already stored plus tasks finished in this run.
    """
    started = time.perf_counter()
    check_options(options)
    modules = tuple(sorted({runner.__module__ for runner in runners.values()}))
    executor = make_executor(options.executor, options.workers, options.address, modules)  # started only if needed
    total = len(tasks)
    with open_store(options.db_path) as store:
        stored = store.stored_ids()
        todo = [task for task in tasks if task.task_id not in stored]
        completed = total - len(todo)
        counts = _Counts(skipped=completed)

        def advance(finished: int) -> None:
            nonlocal completed
            completed += finished
            if on_progress is not None:
                on_progress(completed, total)

        advance(0)
        if todo:
            ran = _execute(todo, runners, executor, store, advance)
            counts = _Counts(ran.done, ran.failed, counts.skipped + ran.skipped)
        if options.export_path is not None:
            export_results(store.rows({task.task_id for task in tasks}), options.export_path)
    return SweepSummary(
        tasks_total=total,
        tasks_done=counts.done,
        tasks_skipped=counts.skipped,
        tasks_failed=counts.failed,
        elapsed_s=time.perf_counter() - started,
        db=str(options.db_path),
        executor=options.executor.value,
        workers=options.workers,
        export=None if options.export_path is None else str(options.export_path),
    )
