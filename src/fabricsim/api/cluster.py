"""Several jobs on one fabric: ``fabricsim cluster SPEC.yaml`` (public API, layer L9).

The spec is read and checked whole before anything runs (:mod:`fabricsim.cluster.spec`): each job's
command against the signature of the API function that command calls (:data:`COMMANDS`), so a
job's options are those of ``train``, ``infer`` and ``traffic`` and are checked by the same typed
edge. Then the fabric is built from the builder string and the jobs' system (the catalog is read
here, the only layer that may) and :func:`fabricsim.cluster.run.run_cluster` places and times them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fabricsim import catalog
from fabricsim.api.communication import traffic
from fabricsim.api.inference import infer
from fabricsim.api.topologies import build_topology
from fabricsim.api.training import train
from fabricsim.cluster.run import ClusterRig, run_cluster
from fabricsim.cluster.spec import ClusterSpec, JobParsers, load_spec
from fabricsim.errors import FabricsimError
from fabricsim.metrics import ClusterResult
from fabricsim.topology.graph import Topology

COMMANDS: dict[str, Callable[..., Any]] = {"train": train, "infer": infer, "traffic": traffic}
"""The API function whose signature types each job command's options (``simulate_train`` forwards
``train``'s keywords, so ``train``'s signature is the one that lists them)."""


def cluster(spec_path: str) -> ClusterResult:
    """Run the jobs of the cluster spec at ``spec_path`` on its fabric, alone and together.

    Returns per job its step time (training), decode step (inference, TPOT) or completion time
    (traffic) alone and shared, the slowdown, and the links' load per switch tier. Every bad input
    is one FabricsimError naming the spec's key (``jobs[1].command``), raised before any job runs.
    """
    spec = load_spec(spec_path, JobParsers(COMMANDS, _parse_placement))
    topology, gpus_per_node = cluster_topology(spec)
    return run_cluster(spec, _rig(spec, topology, gpus_per_node))


def _as_fabric_error(exc: FabricsimError) -> FabricsimError:
    named = "" if exc.field == "topology" else f"{exc.field}: "
    return FabricsimError("fabric", f"{named}{exc.problem}", exc.fix)


def cluster_topology(spec: ClusterSpec) -> tuple[Topology, int]:
    """(the fabric with every node's GPUs as endpoints, GPUs per node). With train/infer jobs, the
    builder's hosts are the NIC ports of the jobs' system (``nics_per_node`` per node, issue 23's
    ``build_system_topology(system, gpus, fabric)``); traffic tenants alone use the bare fabric,
    one host per node."""
    try:
        fabric = build_topology(spec.fabric)
    except FabricsimError as exc:
        raise _as_fabric_error(exc) from None
    if spec.system is None:
        return fabric, 1
    system = catalog.load_system(spec.system)
    nodes = fabric.hosts // system.scale_out.nics_per_node
    if nodes == 0:
        nics = system.scale_out.nics_per_node
        problem = f"{fabric.hosts} host ports hold no node of {system.name} ({nics} NICs each)"
        raise FabricsimError("fabric", problem, "give a larger fabric")
    try:
        topology = _system_topology(system, nodes * system.gpus_per_node, fabric)
    except FabricsimError as exc:
        raise _as_fabric_error(exc) from None
    return topology, system.gpus_per_node


# --- Issue 23 wiring (lead). The modules below are written by the other engineers of issue 23 and
# do not exist on this branch yet; they are imported where used until the branches merge, and then
# belong with the imports at the top of this module.


def _parse_placement(text: str) -> Any:
    from fabricsim.topology.placement import parse_placement  # engineer "place"

    return parse_placement(text)


def _system_topology(system: Any, gpus: int, fabric: Topology) -> Topology:
    from fabricsim.topology.system import build_system_topology  # engineer "topo": the fabric argument

    return build_system_topology(system, gpus, fabric)


def _rig(spec: ClusterSpec, topology: Topology, gpus_per_node: int) -> ClusterRig:
    """The engine entry points run_cluster calls (see :class:`fabricsim.cluster.run.ClusterRig`)."""
    from fabricsim.api import fabric_job  # lead: kind, kwargs, topology, host_of_gpu -> FabricJob
    from fabricsim.engine import fabric_loop  # lead: Fabric, simulate_jobs, link bytes of a run
    from fabricsim.topology.placement import place  # engineer "place"

    fabric = fabric_loop.Fabric(topology, routing=spec.routing, fidelity=spec.fidelity, background=spec.background)
    return ClusterRig(topology, gpus_per_node, fabric, place, fabric_job, fabric_loop.simulate_jobs,
                      fabric_loop.link_bytes)
