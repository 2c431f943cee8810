"""The fabric a ``train`` or ``infer`` step runs on at flow or packet fidelity (public API, layer L9).

Turns the user's fabric choices into the engine's :class:`~fabricsim.engine.fabric_loop.Fabric`:

* ``topology``: a builder string (``traffic``'s syntax, e.g. ``leaf-spine:leaves=32,spines=8,
  hosts_per_leaf=32,oversubscription=4``) replacing the system's scale-out network (its host ports
  become the system's NICs, node-major, rail-minor); default the system YAML's own fabric, built
  as written (:func:`fabricsim.topology.system.build_system_topology`);
* ``nic``: a catalog link swapping the scale-out NIC and its transport, as ``cost --nic`` does:
  RoCE runs PFC + DCQCN over ECMP, InfiniBand credits and the switch's adaptive routing
  (:func:`fabricsim.network.phase.transport_for`); at flow fidelity the transports differ only by
  routing (the flow model has no queues);
* ``placement``: packed | spread | random:SEED | FILE (:mod:`fabricsim.topology.placement`);
* ``background``: ``PATTERN:LOAD``, another tenant's steady traffic on the scale-out fabric: it
  enters at the NICs, so its endpoints are the GPUs cabled to a NIC (every endpoint of a builder
  fabric without NIC nodes), each offering ``LOAD`` of the NIC shares of the GPUs per such GPU (a
  system graph cables every GPU to a NIC, shared where a server has fewer NICs than GPUs: on a TPU
  v6e host, 4 NICs for 8 chips, 8 senders at their 100 Gb/s share of a 200 Gb/s NIC), every flow
  between two scale-up domains (nodes, NVL72 racks, TPU cubes; another job's traffic cannot enter
  this job's NVLink), so a job on one domain cannot take one
  (:func:`fabricsim.network.phase.background_flows`);
* ``transport`` (``roce`` | ``ib`` | ``uet``), ``ber`` (the post-FEC bit-error rate of every
  link) and ``cc_params`` (``NAME=VALUE`` packet parameters, as ``traffic --cc-param`` takes them,
  e.g. ``classes=2``, ``background_class=1``, ``class_sched=wrr``), packet fidelity only: the
  transport replaces the NIC's (:func:`fabricsim.network.phase.named_transport`), the parameters
  override its own, the rate is its ``ber`` parameter. With several traffic classes the job's flows
  run in class 0 and the background's in ``background_class``
  (:mod:`fabricsim.network.phase`). All three are the scale-out fabric's: flows inside one scale-up
  domain (NVLink, ICI) run lossless (PFC, no sender CC) without the NIC's transport, its parameters or ``ber``,
  so they take the same time under every ``transport`` (:class:`~fabricsim.network.phase.
  PacketPhaseNetwork`).

Also the ``network`` block of the results: per parallel dimension the highest fabric tier its groups
cross and the bytes per tier, the exposed communication per collective kind, and at packet level
the pause/ECN/queue/drop and loss-recovery counters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricsim import catalog
from fabricsim.engine.fabric_loop import Fabric, FabricJob, FabricRun, OnFabric
from fabricsim.engine.variability import Variability
from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.specs import LinkKind, LinkSpec, SystemSpec
from fabricsim.specs.inputs import Fidelity
from fabricsim.topology.graph import NodeKind, Topology


@dataclass(frozen=True, slots=True)
class FabricOptions:
    """The fabric choices of ``train``/``infer`` (validated by :func:`build_fabric`)."""

    topology: str | None = None
    placement: str | None = None
    nic: str | None = None
    background: str | None = None
    transport: str | None = None  # packet fidelity only
    ber: str | None = None  # packet fidelity only; a number as text, as the command line gives it
    cc_params: tuple[str, ...] | None = None  # packet fidelity only; NAME=VALUE, as --cc-param gives them

    @property
    def given(self) -> bool:
        return any(getattr(self, key) is not None for key in FABRIC_KEYS + PACKET_KEYS)


@dataclass(frozen=True, slots=True)
class PlacedFabric:
    """A built fabric and where the job sits on it."""

    fabric: Fabric
    host_of_gpu: np.ndarray
    placement: str
    transport: str
    routing: str
    fidelity: str
    options: FabricOptions


def scale_out_nic(name: str) -> LinkSpec:
    """The catalog link ``name`` as a scale-out NIC (InfiniBand or RoCE); one-line errors name ``nic``."""
    try:
        nic = catalog.load_link(name)
    except FabricsimError as exc:
        if exc.field != "link":
            raise
        scale_out = [n for n in catalog.names("links") if n.startswith(("ib-", "roce-"))]
        raise unknown_name("nic", name, scale_out) from None
    if nic.kind not in (LinkKind.INFINIBAND, LinkKind.ROCE):
        problem = f"{nic.name} is a {nic.kind.value} link, not a scale-out NIC"
        raise FabricsimError("nic", problem, "e.g. --nic roce-400g")
    return nic


def with_nic(system: SystemSpec, nic: str | None) -> SystemSpec:
    """``system`` with its scale-out NIC swapped for the catalog link ``nic`` (None: unchanged)."""
    if nic is None:
        return system
    out = system.scale_out.model_copy(update={"nic": scale_out_nic(nic)})
    return system.model_copy(update={"scale_out": out})


def job_system(system: SystemSpec, gpus: int, topology: str | None) -> SystemSpec:
    """The system a job of ``gpus`` chips runs on: with ``topology`` an OCS slice
    (``ocs-torus:DxDxD[,twisted=0|1]``) on an OCS system (tpu-v5p, tpu7x: 4x4x4 ICI cubes joined by
    optical circuit switches), the slice is the job's whole fabric and, for the analytic model, its
    system: one ICI torus of the slice's dims (:func:`fabricsim.planner.slice.slice_system`; the
    analytic collectives see the regular torus, the fabric in the loop the twist). Any other
    topology: ``system`` unchanged. Applying it twice changes nothing. One-line errors: a slice on a
    system without OCS-joined torus cubes, or a slice of other than ``gpus`` chips."""
    from fabricsim.planner.slice import PODS, slice_system
    from fabricsim.topology.parse import ocs_slice_request

    shape = ocs_slice_request(topology)
    if shape is None:
        return system
    dims, _ = shape
    if system.name not in PODS or not system.scale_up.torus:
        kind = "a torus of ICI links" if system.scale_up.torus else f"a {system.scale_up.topology.value} domain"
        problem = f"ocs-torus is a slice of OCS-joined 4x4x4 TPU cubes; {system.name}'s scale-up is {kind} without OCS"
        raise FabricsimError("topology", problem, f"use --system {' or '.join(sorted(PODS))}, or a scale-out "
                             "builder (e.g. fat-tree:k=16)")  # fmt: skip
    chips = math.prod(dims)
    if chips != gpus:
        shape_text = "x".join(map(str, dims))
        raise FabricsimError("gpus", f"the {shape_text} slice is {chips} chips, not {gpus}",
                             f"use --gpus {chips}, or a slice of {gpus} chips")  # fmt: skip
    return slice_system(system, dims)


def _slice_topology(system: SystemSpec, topology: str) -> Topology:
    """The job's OCS slice (:func:`job_system` already applied) on ``system``'s ICI links."""
    from fabricsim.topology.ocs import job_slice
    from fabricsim.topology.parse import ocs_slice_request

    dims, twisted = ocs_slice_request(topology)  # type: ignore[misc]  # job_system checked it is a slice
    up = system.scale_up
    return job_slice(dims, twisted, up.torus_link_Bps, up.link.latency_s, up.bandwidth_Bps, system.gpus_per_node)


def check_fabric_options(options: FabricOptions, fidelity: Fidelity, variability: Variability | None) -> None:
    """Refuse fabric choices the fidelity ignores, and ECMP re-hashing off the flow network."""
    if variability is not None:
        variability.validate()
        if variability.ecmp_rehash and fidelity is not Fidelity.FLOW:
            raise FabricsimError("ecmp", "ECMP re-hashing needs the flow network", "add --fidelity flow")
    for key in PACKET_KEYS:
        if getattr(options, key) is not None and fidelity is not Fidelity.PACKET:
            flag = "cc-param" if key == "cc_params" else key  # as the command line spells it
            raise FabricsimError(flag, "sets the packet network's transport", "add --fidelity packet")
    if options.given and not fidelity.on_fabric:
        given = next(k for k in FABRIC_KEYS if getattr(options, k) is not None)
        raise FabricsimError(given, "needs the fabric in the loop", "add --fidelity flow or --fidelity packet")
    if options.transport is not None or options.ber is not None or options.cc_params is not None:
        packet_transport(LinkKind.ROCE, options)  # a bad name, rate or value: refused before anything runs


FABRIC_KEYS = ("topology", "placement", "nic", "background")
PACKET_KEYS = ("transport", "ber", "cc_params")


def packet_transport(nic_kind: Any, options: FabricOptions) -> Any:
    """The packet transport of the fabric: ``options.transport`` (:func:`~fabricsim.network.phase.
    named_transport`) or the NIC kind's, its parameters overridden by ``options.cc_params`` (as
    ``traffic --cc-param`` reads them), with ``options.ber`` as its bit-error rate (``--ber`` wins
    over a ``ber=`` parameter, as in ``traffic``). Traffic-class settings the transport's lossless
    mode cannot run (e.g. several classes with InfiniBand credits) are refused here, before a run."""
    from fabricsim.api.transports import parse_ber
    from fabricsim.network.packet.params import Lossless, check_classes, parse_cc_params
    from fabricsim.network.phase import named_transport, transport_for

    transport = named_transport(options.transport) if options.transport is not None else transport_for(nic_kind)
    params = transport.params
    if options.cc_params:
        params = params.with_overrides(parse_cc_params(options.cc_params))
    if options.ber is not None:
        params = dataclasses.replace(params, ber=parse_ber(options.ber))
    if params.classes > 1 and transport.lossless is Lossless.CREDIT:  # the fix names these commands' options
        raise FabricsimError("cc-param", f"classes={params.classes:g} needs a PFC or lossy transport (InfiniBand "
                             "credits take one class here)", "use --transport roce or uet, or classes=1")  # fmt: skip
    check_classes(params, transport.lossless)
    if params is transport.params:
        return transport
    return dataclasses.replace(transport, params=params)


def seat(
    system: SystemSpec, gpus: int, fidelity: Fidelity, options: FabricOptions, variability: Variability | None
) -> tuple[PlacedFabric, OnFabric]:
    """The fabric and the job's seat on it; with ECMP re-hashing the nominal run sprays (no
    collisions) and Monte-Carlo run ``k`` hashes ECMP with seed ``k``."""
    seed = variability.seed if variability is not None else 0
    rehash = variability is not None and variability.ecmp_rehash
    placed = build_fabric(system, gpus, fidelity.value, options, seed, "spray" if rehash else None)
    reseeded = None
    if rehash:
        from fabricsim.network.flow import FlowNetwork
        from fabricsim.topology.routing import Routing

        table = placed.fabric.network.table  # type: ignore[attr-defined]

        def reseeded(run_seed: int) -> Fabric:
            return dataclasses.replace(placed.fabric, network=FlowNetwork(table, Routing.ECMP, run_seed))

    return placed, OnFabric(placed.fabric, placed.host_of_gpu, reseeded)


def build_fabric(
    system: SystemSpec, gpus: int, fidelity: str, options: FabricOptions, seed: int = 0, routing: str | None = None
) -> PlacedFabric:
    """The fabric of ``gpus`` GPUs of ``system`` (its NIC already swapped, see :func:`with_nic`)."""
    from fabricsim.api.topologies import build_topology
    from fabricsim.topology.parse import ocs_slice_request
    from fabricsim.topology.placement import parse_placement, place
    from fabricsim.topology.system import build_system_topology

    if ocs_slice_request(options.topology) is not None:  # an OCS slice: the job's whole fabric, no NICs
        system = job_system(system, gpus, options.topology)
        topology = _slice_topology(system, options.topology)  # type: ignore[arg-type]
    else:
        scale_out = build_topology(options.topology) if options.topology is not None else None
        fabric_gpus = gpus if scale_out is None else _fabric_gpus(system, gpus, scale_out.hosts)
        fabric = {"fabric": scale_out} if scale_out is not None else {}
        topology = build_system_topology(system, fabric_gpus, **fabric)
    policy = parse_placement(options.placement or "packed")
    placed = place(topology, gpus, min(system.gpus_per_node, gpus), policy)
    nic_share_Bps = system.scale_out.bandwidth_per_node_Bps / system.gpus_per_node
    transport = packet_transport(system.scale_out.nic.kind, options)
    fabric, transport, chosen = fabric_on(
        topology, system.scale_out.nic.kind, fidelity, routing, (options.background, nic_share_Bps), seed, transport
    )
    fabric = dataclasses.replace(fabric, domain_gpus=system.scale_up.domain_gpus)
    return PlacedFabric(fabric, placed.host_of_gpu, placed.policy, transport.name, chosen, fidelity, options)


def _fabric_gpus(system: SystemSpec, gpus: int, host_ports: int) -> int:
    """GPUs of the nodes a builder fabric of ``host_ports`` ports holds (the job placed on some of
    them, so ``spread`` has the whole fabric to spread over), at least the job's."""
    if gpus < system.gpus_per_node:
        return gpus
    room = host_ports // system.scale_out.nics_per_node * system.gpus_per_node
    try:
        system.check_gpu_count(room)
    except FabricsimError:
        return gpus
    return max(room, gpus)


def fabric_on(
    topology: Topology,
    nic_kind: Any,
    fidelity: str,
    routing: str | None,
    background: tuple[str | None, float],
    seed: int = 0,
    transport: Any = None,
) -> tuple[Fabric, Any, str]:
    """The engine's fabric over ``topology``: the network model of ``fidelity`` with ``transport``
    (None: the NIC kind's; ``routing`` overrides its routing) and the background ``(PATTERN:LOAD or
    None, the line rate each endpoint offers LOAD of)``; also the transport and the routing used. One
    scale-up GPU per domain (set ``domain_gpus`` for a system's fabric)."""
    from fabricsim.network.flow import FlowNetwork
    from fabricsim.network.phase import PacketPhaseNetwork, parse_background, transport_for
    from fabricsim.topology.routing import Routing, route_table

    transport = transport if transport is not None else transport_for(nic_kind)
    chosen = Routing(routing) if routing is not None else Routing(transport.routing)
    table = route_table(topology)
    if fidelity == "packet":
        network: Any = PacketPhaseNetwork(table, transport, seed, chosen)
    else:
        network = FlowNetwork(table, chosen, seed)
    text, line_Bps = background
    flows = None
    if text is not None:
        hosts, domains, per_host = _background_hosts(topology)
        flows = parse_background(text).flows(hosts, line_Bps * per_host, seed, domains)
    return Fabric(topology, network, 1, flows), transport, chosen.value


def _background_hosts(topology: Topology) -> tuple[np.ndarray, np.ndarray, float]:
    """The endpoints a background tenant runs between, their scale-up domains (its flows cross
    domains only: :func:`fabricsim.network.phase.background_flows`) and the endpoints per sender
    (each sender offers the load of that many NIC shares). The senders are the endpoints cabled to a
    NIC (the module docstring); a topology without NIC nodes (a builder's hosts) sends from all."""
    from fabricsim.topology.placement import tier_map

    kind = topology.node_kind
    to_nic = (kind[topology.link_src] == NodeKind.GPU) & (kind[topology.link_dst] == NodeKind.NIC)
    index = np.full(topology.nodes, -1, dtype=np.int64)
    index[topology.endpoints] = np.arange(topology.hosts)
    hosts = np.unique(index[topology.link_src[to_nic]])
    if hosts.size == 0:
        hosts = np.arange(topology.hosts, dtype=np.int64)
    return hosts, tier_map(topology).domain[hosts], topology.hosts / hosts.size


def background_samples(placed: PlacedFabric, system: SystemSpec, seed: int, count: int) -> list[Fabric]:
    """The placed fabric under ``count`` seeds of its background tenant's pattern (seed, seed + 1,
    ...; the first is the placed fabric's own); just the fabric without a background."""
    text = placed.options.background
    if text is None:
        return [placed.fabric]
    from fabricsim.network.phase import parse_background

    spec = parse_background(text)
    hosts, domains, per_host = _background_hosts(placed.fabric.topology)
    line_Bps = system.scale_out.bandwidth_per_node_Bps / system.gpus_per_node * per_host
    samples = [placed.fabric]
    for k in range(1, count):
        samples.append(dataclasses.replace(placed.fabric, background=spec.flows(hosts, line_Bps, seed + k, domains)))
    return samples


def serving_network_report(placed: PlacedFabric, network_runs: int) -> dict[str, Any]:
    """The ``network`` block of ``serve`` at flow/packet fidelity: the fabric choices, the network
    runs made and, at packet level, the pause/ECN/queue/drop counters."""
    out: dict[str, Any] = {
        "fidelity": placed.fidelity,
        "topology": placed.options.topology or placed.fabric.topology.name,
        "placement": placed.placement,
        "transport": placed.transport,
        "routing": placed.routing,
        "background": placed.options.background,
        "network_runs": network_runs,
    }
    counters = getattr(placed.fabric.network, "counters", None)
    if counters is not None:
        out.update(counters().to_json())
    return out


DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")


def _dimension(category: str) -> str:
    head = category.split("-")[0]
    return head if head in DIMENSIONS else "other"


def network_report(
    placed: PlacedFabric, job: FabricJob, run: FabricRun, exposed_s: dict[str, float], job_index: int = 0
) -> dict[str, Any]:
    """The ``network`` block: choices, per-dimension tiers and bytes, exposed time, packet counters."""
    from fabricsim.topology.placement import TIERS, pair_tiers

    topology = placed.fabric.topology
    items = {(stage, payload): (j, stage, payload) for j, stage, payload in run.flows if j == job_index}
    dims: dict[str, dict[str, Any]] = {}
    for op in job.graph.ops:
        item = items.get((op.rank % job.stages, op.payload)) if op.payload is not None else None
        if item is None or run.flows[item].count == 0:
            continue
        flows = run.flows[item]
        tiers = pair_tiers(topology, flows.src, flows.dst)
        blank = {"highest_tier": TIERS[0], "bytes_by_tier": dict.fromkeys(TIERS, 0.0)}
        entry = dims.setdefault(_dimension(op.category), blank)
        top = TIERS[int(tiers.max())]
        if TIERS.index(top) > TIERS.index(entry["highest_tier"]):
            entry["highest_tier"] = top
        per_tier = np.bincount(tiers, weights=flows.size_bytes, minlength=len(TIERS)) * op.repeat
        for name, value in zip(TIERS, per_tier.tolist(), strict=False):
            entry["bytes_by_tier"][name] += value
    out: dict[str, Any] = {
        "fidelity": placed.fidelity,
        "topology": placed.options.topology or topology.name,
        "placement": placed.placement,
        "transport": placed.transport,
        "routing": placed.routing,
        "background": placed.options.background,
        "dimensions": {k: dims[k] for k in sorted(dims, key=(*DIMENSIONS, "other").index)},
        "exposed_s": dict(exposed_s),
        "mixes_timed": len(run.mixes),
        "network_runs": run.network_runs,
        "rounds": run.rounds,
    }
    counters = getattr(placed.fabric.network, "counters", None)
    if counters is not None:
        out.update(counters().to_json())
    return out


def fabric_job(kind: str, kwargs: Mapping[str, Any], topology: Topology, host_of_gpu: np.ndarray) -> FabricJob:
    """The job a ``cluster`` spec's command stands for, on its placed endpoints: a ``train`` step, an
    ``infer`` batch (its time: the decode step), or a ``traffic`` tenant (its flows among its hosts).
    ``kwargs`` are the API function's keywords, as :mod:`fabricsim.cluster.command` parses them."""
    kw = dict(kwargs)
    if kind == "train":
        return _train_job(kw, host_of_gpu)
    if kind == "infer":
        return _infer_job(kw, host_of_gpu)
    if kind == "traffic":
        from fabricsim.api.communication import message_size
        from fabricsim.engine.fabric_loop import traffic_job
        from fabricsim.network.patterns import parse_pattern, pattern_flows

        hosts = int(kw.get("hosts") or host_of_gpu.size)
        flows = pattern_flows(parse_pattern(kw["pattern"]), hosts, message_size(kw.get("size", "64MiB")),
                              int(kw.get("seed", 0)))
        placed = dataclasses.replace(flows, src=host_of_gpu[flows.src], dst=host_of_gpu[flows.dst])
        return traffic_job("traffic", placed)
    raise FabricsimError("command", f"{kind!r} jobs cannot run on a fabric", "use train, infer or traffic")


def _train_job(kw: dict[str, Any], host_of_gpu: np.ndarray) -> FabricJob:
    from fabricsim.api.training import SETTINGS, train, training_options, training_specs
    from fabricsim.engine.training.simulate import TrainingCase, training_job

    names = ("model", "system", "gpus", "global_batch", "seq_len")
    model, system, gpus, batch, seq_len = (kw.pop(key) for key in names)
    base = train(model, system, gpus, batch, seq_len, **kw)
    shape = {key: value for key, value in kw.items() if key not in SETTINGS}
    model_spec, system_spec, layout = training_specs(model, system, gpus, shape)
    options = training_options(**dict(base.options))  # type: ignore[arg-type]
    return training_job(TrainingCase(model_spec, system_spec, layout, batch, seq_len, options), host_of_gpu)


def _infer_job(kw: dict[str, Any], host_of_gpu: np.ndarray) -> FabricJob:
    from fabricsim.api.inference import infer, inference_specs
    from fabricsim.engine.inference.analytic import InferScenario
    from fabricsim.engine.inference.simulate import inference_job
    from fabricsim.engine.inference.step import LayoutRequest

    model, system, gpus = kw.pop("model"), kw.pop("system"), kw.pop("gpus")
    base = infer(model, system, gpus, **kw)
    get = kw.get
    request = LayoutRequest(gpus, get("tp"), get("pp"), get("ep"), get("dtype"), get("kv_dtype"))
    model_spec, system_spec, layout = inference_specs(model, system, request)
    scenario = InferScenario(model_spec, system_spec, layout, kw["input_len"], kw["output_len"], base.batch,
                             cuda_graphs=bool(get("cuda_graphs", True)))
    return inference_job(scenario, host_of_gpu)
