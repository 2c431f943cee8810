"""Sweeps (layer L8): run many scenarios (a grid or a list from a YAML spec), keep every result.

``spec`` parses the YAML, ``tasks`` expands it into typed tasks with stable ids and runs one task,
``executors`` runs tasks on a local process pool (default) or Ray, ``store`` keeps results in SQLite
as they finish (resumable), ``export`` writes CSV/Parquet, ``run`` ties them together.

The mapping task kind -> function is injected by the caller (:func:`fabricsim.api.sweep_runners`):
sweep sits below the public API and never imports it.
"""

from fabricsim.sweep.executors import ExecutorKind, parse_executor
from fabricsim.sweep.export import export_results
from fabricsim.sweep.run import SweepOptions, check_options, default_workers, run_sweep
from fabricsim.sweep.spec import SweepSpec, TaskKind, load_spec, parse_spec
from fabricsim.sweep.store import ResultStore, open_store
from fabricsim.sweep.tasks import Runner, RunnerRegistry, Task, TaskOutcome, check_task_count, expand, run_task

__all__ = [
    "ExecutorKind",
    "ResultStore",
    "Runner",
    "RunnerRegistry",
    "SweepOptions",
    "SweepSpec",
    "Task",
    "TaskKind",
    "TaskOutcome",
    "check_options",
    "check_task_count",
    "default_workers",
    "expand",
    "export_results",
    "load_spec",
    "open_store",
    "parse_executor",
    "parse_spec",
    "run_sweep",
    "run_task",
]
