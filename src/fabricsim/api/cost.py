"""Power, energy, bill of materials and price of a cluster (public API, layer L9).

The only place the cost catalog (``catalog/data/cost/components.yaml``) is read and catalog
names become a :class:`~fabricsim.cost.spec.Cluster`. ``attach_*`` add energy to the train,
infer and serve results (optional fields; the power of a (system, GPUs) pair is cached).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fabricsim import catalog
from fabricsim.cost.bom import bill_of_materials
from fabricsim.cost.energy import cable_J_per_byte, infer_energy, serve_energy, train_energy
from fabricsim.cost.power import PowerBreakdown, cluster_power
from fabricsim.cost.spec import Cluster, Cooling, CostCatalog, Load, Optics
from fabricsim.errors import FabricsimError, parse_choice, unknown_name
from fabricsim.specs import SystemSpec
from fabricsim.specs.fabric import LinkKind, LinkSpec, SwitchSpec
from fabricsim.textfile import load_shipped_yaml
from fabricsim.topology.clos_counts import Inventory, rail_optimized_inventory
from fabricsim.units import parse_size

if TYPE_CHECKING:
    from fabricsim.cost.result import CostResult, RailOnlyComparison
    from fabricsim.metrics import InferResult, ServeResult, TrainResult
    from fabricsim.topology.builders import LinkParams
    from fabricsim.topology.graph import Topology

COMPONENTS = ("cost", "components.yaml")
FABRICS = ("rail-optimized", "rail-only", "fat-tree")
MEDIA_FAMILIES = {"dragonfly": "dragonfly", "torus": "torus"}


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load_cost_catalog(prices: str | None = None) -> CostCatalog:
    """The shipped component data, with ``prices`` (a YAML file of the same shape, any subset of
    keys, numbers plain or ``{value, source}``) merged over it. Cached: the shipped data for the
    process, a prices file until it changes on disk (as the catalog's loads)."""
    return _shipped_costs() if prices is None else _priced_costs(prices)


@lru_cache(maxsize=1)
def _shipped_costs() -> CostCatalog:
    return _costs(None)


@catalog.cached_load("cost", maxsize=8)
def _priced_costs(prices: str) -> CostCatalog:
    return _costs(prices)


def _costs(prices: str | None) -> CostCatalog:
    raw = load_shipped_yaml(catalog.data_root().joinpath(*COMPONENTS))
    data, sources = catalog.unwrap_sources(raw)
    if prices is not None:
        path = Path(prices)
        if not path.is_file():
            raise FabricsimError("prices", f"not a regular file: {prices}", "give a YAML file of prices")
        extra, extra_sources = catalog.unwrap_sources(catalog.read_yaml(path, "prices"))
        data = _merge(data, extra)
        sources.update({k: f"user file {prices}: {v}" for k, v in extra_sources.items()})
    try:
        return CostCatalog.model_validate({**data, "sources": sources})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise FabricsimError(
            "prices" if prices else "cost catalog", f"{where}: {error['msg']}", "fix that key"
        ) from None


def _port_gbps(bandwidth_Bps: float) -> int:
    return round(bandwidth_Bps * 8 / 1e9)


def _fabric(system: SystemSpec, gpus: int, topology: str, link: LinkParams, radix: int) -> Topology:
    # deferred: building a graph imports numpy, which the system fabrics' counts do not need
    # (_fabric_inventory), so train/infer/serve's energy figures start without it
    from fabricsim.api.topologies import build_topology
    from fabricsim.topology.builders import RailSpec, rail_optimized
    from fabricsim.topology.rail_only import rail_only

    nodes, rails = system.nodes(gpus), system.scale_out.nics_per_node
    over = system.scale_out.oversubscription
    if topology == "rail-optimized":
        return rail_optimized(RailSpec(nodes, rails, radix, link, over))
    if topology == "fat-tree":  # one any-to-any Clos, NICs not grouped by rail (as the system builder)
        return rail_optimized(RailSpec(nodes * rails, 1, radix, link, over))
    if topology == "rail-only":
        per_domain = system.scale_up.domain_gpus // system.gpus_per_node
        if nodes % per_domain:
            raise FabricsimError(
                "gpus", f"rail-only needs whole {system.scale_up.domain_gpus}-GPU scale-up domains, got {gpus} GPUs"
            )
        return rail_only(RailSpec(nodes // per_domain, rails * per_domain, radix, link, over))
    fabric = build_topology(topology)
    if fabric.hosts < nodes * rails:
        raise FabricsimError("topology", f"{topology} has {fabric.hosts} host ports for {nodes * rails} NICs")
    return fabric


def _fabric_inventory(
    system: SystemSpec, gpus: int, topology: str, nic: LinkSpec, switch: SwitchSpec
) -> tuple[Inventory, float]:
    """The scale-out fabric's counts (boxes of the switch radix for the system fabrics) and its
    line rate. A rail-optimized or fat-tree system fabric is counted in closed form
    (:func:`~fabricsim.topology.clos_counts.rail_optimized_inventory`, equal to counting the built
    graph); anything else is built and counted."""
    nodes, rails = system.nodes(gpus), system.scale_out.nics_per_node
    over, radix = system.scale_out.oversubscription, switch.radix
    shape = {"rail-optimized": (nodes, rails), "fat-tree": (nodes * rails, 1)}.get(topology)  # as _fabric builds them
    counted = None if shape is None else rail_optimized_inventory(*shape, radix, over)
    if counted is not None:
        return counted, nic.bandwidth_Bps
    from fabricsim.topology.builders import LinkParams  # deferred with the graph (numpy), see _fabric
    from fabricsim.topology.inventory import count_inventory

    fabric = _fabric(system, gpus, topology, LinkParams(nic.bandwidth_Bps, switch.latency_s), radix)
    return count_inventory(fabric, radix if topology in FABRICS else None), fabric.line_rate_Bps


@dataclass(frozen=True, slots=True)
class CostChoices:
    """What the user chose besides system and GPU count (names, validated when used)."""

    topology: str | None = None
    optics: str = Optics.PLUGGABLE.value
    cooling: str | None = None
    nic: str | None = None
    switch: str | None = None


def _scale_out_nic(name: str) -> LinkSpec:
    """The catalog link ``name`` as a NIC; an unknown name is reported as ``nic`` with the scale-out
    links (InfiniBand, RoCE) as the choices ("" is refused too)."""
    try:
        return catalog.load_link(name)
    except FabricsimError as exc:
        if exc.field != "link":
            raise
        scale_out = [n for n in catalog.names("links") if n.startswith(("ib-", "roce-"))]
        raise unknown_name("nic", name, scale_out) from None


def _cluster(system: SystemSpec, gpus: int, choices: CostChoices, costs: CostCatalog) -> Cluster:
    """The cluster to price: the scale-out fabric built and counted, components named.

    Tiers above the leaves are packed into boxes of the switch radix for the system fabrics
    (rail-optimized, rail-only, fat-tree); a builder string is counted as built."""
    out = system.scale_out
    nic = _scale_out_nic(choices.nic) if choices.nic is not None else out.nic
    if nic.kind not in (LinkKind.INFINIBAND, LinkKind.ROCE):
        raise FabricsimError("nic", f"{nic.name} is a {nic.kind.value} link, not a scale-out NIC", "e.g. --nic ib-xdr")
    switch = catalog.load_switch(choices.switch) if choices.switch is not None else out.switch
    kind = out.topology.value if choices.topology is None else choices.topology
    name = kind.partition(":")[0]
    if kind not in FABRICS:
        from fabricsim.topology.parse import BUILDERS  # deferred with the graph (numpy), see _fabric

        if name not in BUILDERS:
            raise unknown_name("topology", kind, sorted({*FABRICS, *BUILDERS}))
    optics = parse_choice("optics", choices.optics, Optics)
    cooling = parse_choice("cooling", choices.cooling, Cooling) if choices.cooling is not None else None
    if system.device.tdp_w is None:
        raise FabricsimError(
            "system", f"{system.device.name} has no published power (tdp_w)", "give a device file with tdp_w for cost"
        )
    nodes = system.nodes(gpus)
    fabric = None if nodes == 1 else _fabric_inventory(system, gpus, kind, nic, switch)
    entry = costs.systems.get(system.name)
    return Cluster(
        system=system.name,
        device=system.device.name,
        gpus=gpus,
        nodes=nodes,
        gpus_per_node=system.gpus_per_node,
        nics_per_node=out.nics_per_node,
        gpu_tdp_W=system.device.tdp_w,
        nic=nic.name,
        switch=switch.name,
        switch_radix=switch.radix,
        port_gbps=_port_gbps(fabric[1] if fabric is not None else nic.bandwidth_Bps),
        fabric=None if fabric is None else fabric[0],
        optics=optics,
        cooling=cooling or (entry.cooling if entry is not None else Cooling.AIR),
        media_family=MEDIA_FAMILIES.get(name, "rail" if kind in FABRICS else "tor"),
    )


def cost(
    system: str,
    gpus: int,
    *,
    topology: str | None = None,
    optics: str = "pluggable",
    cooling: str | None = None,
    load: str = "max",
    nic: str | None = None,
    switch: str | None = None,
    prices: str | None = None,
) -> CostResult:
    """Power at ``load`` (max | train | infer | idle), bill of materials and capex of ``gpus`` GPUs
    of ``system`` with scale-out ``topology`` (rail-optimized | rail-only | fat-tree | a builder
    string such as ``dragonfly:a=16,p=8,h=8``; default the system's). ``nic``/``switch`` swap the
    scale-out NIC (a catalog link) and switch; ``cooling`` defaults to the system's."""
    # deferred: train/infer/serve import this module for their energy figures only (start-up time)
    from fabricsim.cost.prices import capex
    from fabricsim.cost.result import CostResult

    spec = catalog.load_system(system)
    spec.check_gpu_count(gpus)
    costs = load_cost_catalog(prices)
    cluster = _cluster(spec, gpus, CostChoices(topology, optics, cooling, nic, switch), costs)
    bom = bill_of_materials(cluster, costs.media.get(cluster.media_family, {}))
    power = cluster_power(cluster, bom, costs, parse_choice("load", load, Load))
    switch_entry = costs.switches.get(cluster.switch)
    port = costs.optics.get(bom.port_gbps)
    per_port = (
        0.0 if port is None else (port.cpo_W if cluster.optics == Optics.CPO and port.cpo_W else port.pluggable_W)
    )
    return CostResult(
        system=spec.name,
        gpus=gpus,
        topology=topology or spec.scale_out.topology.value,
        optics=cluster.optics.value,
        cooling=cluster.cooling.value,
        power=power,
        bom=bom,
        capex=capex(cluster, bom, costs),
        energy_J_per_byte=tuple(
            cable_J_per_byte(bom, costs, switch_entry.power_W if switch_entry else 0.0, cluster.switch_radix).items()
        ),
        optics_W_per_port=float(per_port),
    )


def compare_rail_only(
    system: str, gpus: int, *, size: str | int = "16MiB", a2a_gpus: int | None = None
) -> RailOnlyComparison:
    """Rail-only vs the system's rail-optimized fabric for ``gpus`` GPUs (network power, capex),
    and an MoE all-to-all of ``size`` bytes per GPU pair on ``a2a_gpus`` GPUs (default two
    scale-up domains, at least 64 GPUs) of each, timed by the flow model (see
    :mod:`fabricsim.cost.all_to_all`; a rail is NIC r of every scale-up domain)."""
    from fabricsim.cost.result import RailOnlyComparison  # deferred, as in cost()

    spec = catalog.load_system(system)
    base = cost(system, gpus, topology="rail-optimized")
    only = cost(system, gpus, topology="rail-only")
    size_bytes = parse_size(size, "size")
    out, domain = spec.scale_out, spec.scale_up.domain_gpus
    if out.nics_per_node != spec.gpus_per_node:
        raise FabricsimError("system", f"{spec.name} has not one NIC per GPU", "use a DGX-style system")
    count = a2a_gpus if a2a_gpus is not None else max(64, 2 * domain)
    if isinstance(count, bool) or not isinstance(count, int) or count < 2 * domain or count % domain:
        raise FabricsimError("a2a_gpus", f"must be a multiple of the {domain}-GPU domain, at least two, got {count!r}")
    from fabricsim.topology.builders import LinkParams, RailSpec  # deferred with the graph (numpy), see _fabric

    rail = RailSpec(count // domain, domain, out.switch.radix, LinkParams(out.nic.bandwidth_Bps, out.switch.latency_s))
    nvlink = LinkParams(spec.scale_up.bandwidth_Bps, spec.scale_up.link.latency_s)
    # deferred on purpose: the flow model (scipy) is only needed here, and this module is imported by
    # every train/infer/serve call for their energy figures (start-up time of the analytic paths)
    from fabricsim.cost.all_to_all import moe_all_to_all

    times = moe_all_to_all(rail, nvlink, float(size_bytes))
    return RailOnlyComparison(base, only, times.rail_optimized_s, times.rail_only_s, times.forward_s, size_bytes)


@lru_cache(maxsize=256)
def _busy_power(system_json: str, gpus: int, load: Load) -> PowerBreakdown:
    spec = SystemSpec.model_validate_json(system_json)
    costs = load_cost_catalog()
    cluster = _cluster(spec, gpus, CostChoices(), costs)
    return cluster_power(cluster, bill_of_materials(cluster, costs.media.get(cluster.media_family, {})), costs, load)


_SYSTEM_JSON: dict[int, tuple[SystemSpec, str]] = {}  # id -> (the spec, kept alive so the id stays its own; JSON)


def _system_json(system: SystemSpec) -> str:
    """``system.model_dump_json()``, the key of the power cache, once per spec object (the catalog
    returns one object per name; dumping it cost a fifth of a train call)."""
    hit = _SYSTEM_JSON.get(id(system))
    if hit is None or hit[0] is not system:
        if len(_SYSTEM_JSON) >= 256:  # as the catalog's caches
            _SYSTEM_JSON.clear()
        hit = _SYSTEM_JSON[id(system)] = (system, system.model_dump_json())
    return hit[1]


def _power(system: SystemSpec, gpus: int, load: Load) -> PowerBreakdown | None:
    """Cached power of a system's cluster; None for a system without power data."""
    if system.name not in load_cost_catalog().systems:
        return None
    return _busy_power(_system_json(system), gpus, load)


def train_power(system: SystemSpec, gpus: int) -> PowerBreakdown | None:
    """The cached power of ``gpus`` GPUs of ``system`` under training load (None without power data)."""
    return _power(system, gpus, Load.TRAIN)


def attach_train(result: TrainResult, system: SystemSpec) -> TrainResult:
    power = train_power(system, result.gpus)
    return result if power is None else train_energy(result, power)


def attach_infer(result: InferResult, system: SystemSpec) -> InferResult:
    power = _power(system, result.gpus, Load.INFER)
    idle = _power(system, result.gpus, Load.IDLE)
    return result if power is None or idle is None else infer_energy(result, power, idle)


def attach_serve(result: ServeResult, system: SystemSpec) -> ServeResult:
    power = _power(system, result.gpus, Load.INFER)
    return result if power is None else serve_energy(result, power)
