"""Several jobs on one fabric: ``fabricsim cluster SPEC.yaml`` (public API, layer L9).

The spec is read and checked whole before anything runs (:mod:`fabricsim.cluster.spec`): each job's
command against the signature of the API function that command calls (:data:`COMMANDS`), so a
job's options are those of ``train``, ``infer`` and ``traffic`` and are checked by the same typed
edge. Then the fabric is built from the builder string and the jobs' system (the catalog is read
here, the only layer that may) and :func:`fabricsim.cluster.run.run_cluster` places and times them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fabricsim import catalog
from fabricsim.api.communication import traffic
from fabricsim.api.inference import infer
from fabricsim.api.topologies import build_topology
from fabricsim.api.training import train
from fabricsim.cluster.run import ClusterRig, run_cluster
from fabricsim.cluster.spec import ClusterSpec, JobParsers, cc_params_error, load_spec
from fabricsim.errors import FabricsimError
from fabricsim.metrics import ClusterResult
from fabricsim.specs import SystemSpec
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
    built = cluster_topology(spec)
    return run_cluster(spec, _rig(spec, built))


@dataclass(frozen=True, slots=True)
class ClusterFabric:
    """The spec's fabric built: GPUs as endpoints, node-major, ``gpus_per_node`` each; the jobs'
    system (None for traffic tenants alone on the bare builder fabric, one host per node)."""

    topology: Topology
    gpus_per_node: int
    system: SystemSpec | None


def _as_fabric_error(exc: FabricsimError) -> FabricsimError:
    named = "" if exc.field == "topology" else f"{exc.field}: "
    return FabricsimError("fabric", f"{named}{exc.problem}", exc.fix)


def cluster_topology(spec: ClusterSpec) -> ClusterFabric:
    """The fabric of ``spec``. With train/infer jobs, the builder's hosts are the NIC ports of the
    jobs' system, as many whole nodes as they hold (``nics_per_node`` each, issue 23's
    ``build_system_topology(system, gpus, fabric)``); errors name ``fabric``."""
    try:
        fabric = build_topology(spec.fabric)
    except FabricsimError as exc:
        raise _as_fabric_error(exc) from None
    if spec.system is None:
        return ClusterFabric(fabric, 1, None)
    system = catalog.load_system(spec.system)
    nics = system.scale_out.nics_per_node
    nodes = fabric.hosts // nics
    if nodes == 0:
        problem = f"{fabric.hosts} host ports hold no node of {system.name} ({nics} NICs each)"
        raise FabricsimError("fabric", problem, "give a larger fabric")
    try:
        topology = _system_topology(system, nodes * system.gpus_per_node, fabric)
    except FabricsimError as exc:
        raise _as_fabric_error(exc) from None
    return ClusterFabric(topology, system.gpus_per_node, system)


# --- Issue 23 wiring (lead). The modules below are written on the other branches of issue 23 and
# do not exist on this one; they are imported where used until the branches merge, and then belong
# with the imports at the top of this module. Names as on the engine branch (api/fabric.py,
# engine/fabric_loop.py) when this was written.


def _parse_placement(text: str) -> Any:
    from fabricsim.topology.placement import parse_placement  # branch "place"

    return parse_placement(text)


def _system_topology(system: SystemSpec, gpus: int, fabric: Topology) -> Topology:
    from fabricsim.topology.system import build_system_topology  # branch "topo": the fabric argument

    return build_system_topology(system, gpus, fabric)


def _rig(spec: ClusterSpec, built: ClusterFabric) -> ClusterRig:
    """The engine's fabric for the spec and the entry points run_cluster calls (see
    :class:`fabricsim.cluster.run.ClusterRig`), built as ``api.fabric.build_fabric`` builds a
    single job's: flow fidelity routes with the spec's routing, packet fidelity with the NIC's
    transport (RoCE when the fabric has no system) or the spec's ``transport``/``ber``/``cc_params``, the background
    over every endpoint."""
    from fabricsim.api.fabric import FabricOptions, fabric_job, fabric_on, packet_transport
    from fabricsim.engine import fabric_loop
    from fabricsim.topology.placement import place

    topology, system = built.topology, built.system
    line_Bps = topology.line_rate_Bps  # every endpoint offers the background's LOAD of its NIC share
    if system is not None:
        line_Bps = system.scale_out.bandwidth_per_node_Bps / system.gpus_per_node
    nic_kind = system.scale_out.nic.kind if system is not None else "roce"
    options = FabricOptions(transport=spec.transport, ber=spec.ber, cc_params=spec.cc_params)
    try:
        transport = packet_transport(nic_kind, options)
    except FabricsimError as exc:  # a traffic-class setting the transport cannot run: the spec's key
        raise (cc_params_error(exc) if exc.field == "cc-param" else exc) from None
    fabric, _, _ = fabric_on(topology, nic_kind, spec.fidelity, spec.routing, (spec.background, line_Bps), 0, transport)
    if system is not None:
        fabric = dataclasses.replace(fabric, domain_gpus=system.scale_up.domain_gpus)
    return ClusterRig(topology, built.gpus_per_node, fabric, place, fabric_job, fabric_loop.simulate_jobs)
