"""The Ray executor on a local Ray instance gives the same stored rows as the local pool.

One Ray start for the whole module (module-scoped fixture), shut down afterwards; the executor joins
the running instance and leaves it running (it only shuts down a Ray it started itself).
"""

from __future__ import annotations

import os

import pytest
import sweep_fakes

from fabricsim import api
from fabricsim.sweep import ExecutorKind, SweepOptions, expand, open_store, parse_spec, run_sweep

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    old = os.environ.get("PYTHONPATH")
    # Ray workers must import the test-only runners by name, like pool workers do.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(sweep_fakes.HERE), old) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 2**20)
    try:
        yield ray
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def _rows(db):
    with open_store(db) as store:
        return store.rows()


def test_ray_and_local_store_identical_rows_for_fake_tasks(local_ray, tmp_path):
    tasks = expand(parse_spec(sweep_fakes.grid_spec()), sweep_fakes.RUNNERS)
    on_ray = run_sweep(tasks, sweep_fakes.RUNNERS, SweepOptions(tmp_path / "ray.sqlite", ExecutorKind.RAY, 2))
    run_sweep(tasks, sweep_fakes.RUNNERS, SweepOptions(tmp_path / "local.sqlite", ExecutorKind.LOCAL, 2))
    assert (on_ray.tasks_done, on_ray.tasks_failed, on_ray.executor) == (16, 8, "ray")
    assert _rows(tmp_path / "ray.sqlite") == _rows(tmp_path / "local.sqlite")
    assert local_ray.is_initialized()  # joined, not owned: left running


def test_ray_and_local_agree_on_real_collective_tasks(local_ray, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "tasks:\n  - kind: collective\n    grid: {op: [all-reduce, all-gather], system: [dgx-a100, dgx-h100],"
        " gpus: [8, 16], size: [1MiB, 1GiB]}\n"
    )
    summary = api.sweep(spec, db=tmp_path / "ray.sqlite", executor="ray", workers=2)
    api.sweep(spec, db=tmp_path / "local.sqlite", executor="local", workers=2)
    assert summary.tasks_done == 16 and summary.tasks_failed == 0
    assert _rows(tmp_path / "ray.sqlite") == _rows(tmp_path / "local.sqlite")
