"""Run a cluster spec: place its jobs on one fabric, time each alone and all together (layer L8).

1. Place the jobs one after another on the nodes still free (``place(..., free_nodes=...)``), whole
   nodes each, in the order the spec lists them; a job that does not fit is a one-line error.
2. Build each job's step graph on its placed GPUs (``fabric_job``: a training job's step, an
   inference job's decode step, a traffic tenant's flows).
3. Time every job alone on the fabric (``simulate_jobs([job], fabric)``), then all of them together
   (``simulate_jobs(jobs, fabric)``, every collective timed with whatever else is on the links then).
4. Report per job alone / shared / slowdown, and per switch tier the links' load in the shared run
   (:mod:`fabricsim.cluster.links`).

The engine, the placement and the job builder come in through :class:`ClusterRig`:
:mod:`fabricsim.api.cluster` passes the real ones (``fabric_job`` needs the catalog, which only the
API layer reads), tests pass fakes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricsim.cluster.command import option_error
from fabricsim.cluster.links import job_link_bytes, tier_loads
from fabricsim.cluster.spec import ClusterSpec, JobSpec
from fabricsim.errors import FabricsimError
from fabricsim.metrics import ClusterJobResult, ClusterResult
from fabricsim.topology.graph import Topology


@dataclass(frozen=True, slots=True)
class ClusterRig:
    """The fabric built from the spec and the engine entry points, as the API layer assembles them.

    ``topology``: the whole fabric with GPUs as endpoints, node-major (GPU g on node
    g // ``gpus_per_node``; a bare builder fabric: one host per node). ``fabric``: the engine's
    ``fabric_loop.Fabric`` over it (network model of the spec's fidelity and routing, background).
    ``place``: ``fabricsim.topology.placement.place``. ``fabric_job(kind, kwargs, topology,
    host_of_gpu)``: ``fabricsim.api.fabric_job`` (a ``FabricJob``). ``simulate_jobs(jobs, fabric)``:
    ``fabricsim.engine.fabric_loop.simulate_jobs``, (one result with ``step_time_s`` per job, the
    ``FabricRun``, whose flows :func:`~fabricsim.cluster.links.job_link_bytes` routes)."""

    topology: Topology
    gpus_per_node: int
    fabric: Any
    place: Callable[..., Any]
    fabric_job: Callable[[str, Mapping[str, Any], Topology, np.ndarray], Any]
    simulate_jobs: Callable[[list[Any], Any], tuple[Sequence[Any], Any]]


def place_jobs(spec: ClusterSpec, rig: ClusterRig) -> list[Any]:
    """Each job's ``Placement`` on the nodes the jobs before it left free, in spec order."""
    nodes = rig.topology.hosts // rig.gpus_per_node
    free = np.ones(nodes, dtype=bool)
    placements = []
    for index, job in enumerate(spec.jobs):
        needed = -(-job.gpus // rig.gpus_per_node)
        available = np.flatnonzero(free)
        if needed > available.size:
            problem = (f"{job.name} needs {needed} nodes of {rig.gpus_per_node} GPUs; the jobs before it leave "
                       f"{available.size} of the fabric's {nodes} free")
            raise FabricsimError(f"jobs[{index}].command", problem, "use fewer GPUs or a larger fabric")
        try:
            placement = rig.place(rig.topology, job.gpus, rig.gpus_per_node, job.policy, free_nodes=available)
        except FabricsimError as exc:
            raise FabricsimError(f"jobs[{index}].placement", exc.problem, exc.fix) from None
        free[np.asarray(placement.nodes)] = False
        placements.append(placement)
    return placements


def _build(index: int, job: JobSpec, placement: Any, rig: ClusterRig) -> Any:
    """The job's step graph on its hosts; the API's errors (an unknown model, a layout that does not
    divide) name the job's command."""
    try:
        return rig.fabric_job(job.kind, job.kwargs, rig.topology, placement.host_of_gpu)
    except FabricsimError as exc:
        raise option_error(f"jobs[{index}].command", exc) from None


def run_cluster(spec: ClusterSpec, rig: ClusterRig) -> ClusterResult:
    """Place, build, then time every job alone and all together; see the module docstring."""
    placements = place_jobs(spec, rig)
    jobs = [_build(index, job, placement, rig) for index, (job, placement) in
            enumerate(zip(spec.jobs, placements, strict=True))]
    alone = [rig.simulate_jobs([job], rig.fabric)[0][0].step_time_s for job in jobs]
    shared_results, shared_run = rig.simulate_jobs(jobs, rig.fabric)
    shared = [result.step_time_s for result in shared_results]
    results = tuple(
        ClusterJobResult(job.name, job.kind, job.gpus, job.placement, alone_s, shared_s)
        for job, alone_s, shared_s in zip(spec.jobs, alone, shared, strict=True)
    )
    # the links' load in the shared steady state: each job's bytes per step over its shared step time
    links = tier_loads(rig.topology, job_link_bytes(jobs, rig.fabric, shared_run), np.asarray(shared))
    return ClusterResult(spec.fabric, spec.routing, spec.fidelity, spec.background, results, links)
