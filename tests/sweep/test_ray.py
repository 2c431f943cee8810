"""The Ray executor on a local Ray instance gives the same stored rows as the local pool.

Ray takes seconds to start, so this module starts it once (module-scoped fixture, through the
executor's own start path) and holds ONE test: pytest-xdist's default scheduling may split a
module's tests across workers, which would start Ray once per worker. Sweeps inside the test join
the running instance and leave it running; the fixture's executor started it, so it shuts it down.
"""

from __future__ import annotations

import os

import pytest
import sweep_fakes

from fabricsim import api
from fabricsim.sweep import ExecutorKind, SweepOptions, expand, open_store, parse_spec, run_sweep
from fabricsim.sweep.executors import RayExecutor

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    old = os.environ.get("PYTHONPATH")
    # Ray workers must import the test-only runners by name, like pool workers do.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(sweep_fakes.HERE), old) if p)
    try:
        with RayExecutor(workers=2):  # starts a local Ray (num_cpus=2, no dashboard) and owns it
            yield ray
        assert not ray.is_initialized(), "the executor shuts down the Ray it started"
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def _rows(db):
    with open_store(db) as store:
        return store.rows()


def test_ray_and_local_store_identical_rows(local_ray, tmp_path):
    tasks = expand(parse_spec(sweep_fakes.grid_spec()), sweep_fakes.RUNNERS)
    on_ray = run_sweep(tasks, sweep_fakes.RUNNERS, SweepOptions(tmp_path / "ray.sqlite", ExecutorKind.RAY, 2))
    run_sweep(tasks, sweep_fakes.RUNNERS, SweepOptions(tmp_path / "local.sqlite", ExecutorKind.LOCAL, 2))
    assert (on_ray.tasks_done, on_ray.tasks_failed, on_ray.executor) == (16, 8, "ray")
    assert _rows(tmp_path / "ray.sqlite") == _rows(tmp_path / "local.sqlite")
    assert local_ray.is_initialized()  # joined, not owned: left running

    spec = tmp_path / "spec.yaml"  # real collective tasks through the public API
    spec.write_text(
        "tasks:\n  - kind: collective\n    grid: {op: [all-reduce, all-gather], system: [dgx-a100, dgx-h100],"
        " gpus: [8, 16], size: [1MiB, 1GiB]}\n"
    )
    summary = api.sweep(spec, db=tmp_path / "api-ray.sqlite", executor="ray", workers=2)
    api.sweep(spec, db=tmp_path / "api-local.sqlite", executor="local", workers=2)
    assert (summary.tasks_done, summary.tasks_failed) == (16, 0)
    assert _rows(tmp_path / "api-ray.sqlite") == _rows(tmp_path / "api-local.sqlite")
