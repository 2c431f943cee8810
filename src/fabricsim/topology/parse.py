"""Builder strings -> topologies (layer L2): ``fat-tree:k=8``, ``leaf-spine:...``, ``dragonfly:...``,
``torus:dims=8x8x8``, ``rail-optimized:nodes=..,rails=..,radix=..``, ``nvswitch:gpus=8,system=dgx-h100``,
``nvl72``, or a catalog system name (``dgx-h100`` or ``dgx-h100:gpus=256``).

``nvswitch:`` is one scale-up domain of a catalog system (``system=``, default ``dgx-h100``): its
per-GPU scale-up bandwidth, link latency and NVLS capability, ``gpus=`` defaulting to the system's
domain size (8 on DGX, 72 on gb200-nvl72).

Links default to the catalog's InfiniBand NDR port (``ib-ndr``: 50 GB/s per direction) with the
Quantum-2 switch's port-to-port latency per hop. Every switched-fabric builder takes, per tier:
``gbps=`` (or ``leaf_gbps=``) the host-to-leaf links' rate, the line rate (Gb/s); ``spine_gbps=`` the
switch-to-switch links' rate (a Clos's leaf-spine or edge-aggregation links, a dragonfly's or torus's
router links); ``core_gbps=`` a 3-tier Clos's aggregation-core links (fat-tree, rail-optimized;
default ``spine_gbps``); ``global_gbps=`` a dragonfly's global links (default ``spine_gbps``); and
``latency=`` every link's latency (``1us``, ``500ns``; a bare number is seconds). Every builder
accepts only its own keys (a misspelt key is refused, never ignored).

The catalog is not read here: the caller (``api``) passes a :class:`TopologyCatalog` with the default
link and the systems. Every number is checked (finite, positive) and the size of what a string
would build (hosts + switches, and cables) is checked against the caps of :mod:`fabricsim.limits`
before anything is allocated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.limits import check_cap
from fabricsim.specs import SystemSpec
from fabricsim.topology.builders import (
    LinkParams,
    RailSpec,
    dragonfly,
    fat_tree,
    leaf_spine,
    nvl72_domain,
    nvswitch_domain,
    rail_optimized,
    torus,
)
from fabricsim.topology.graph import Topology
from fabricsim.topology.ocs import check_slice, ocs_torus
from fabricsim.topology.system import build_system_topology
from fabricsim.units import gbit_to_Bps, parse_duration

DEFAULT_LINK = "ib-ndr"  # the catalog names the caller reads for TopologyCatalog.link
DEFAULT_SWITCH = "quantum2-qm9700"
DEFAULT_SYSTEM_GPUS = 256
DEFAULT_NVSWITCH_SYSTEM = "dgx-h100"
DEFAULT_OCS_SYSTEM = "tpu-v5p"  # ocs-torus takes its ICI link and chip bandwidth from this system


@dataclass(frozen=True, slots=True)
class TopologyCatalog:
    """What a builder string may name, given by the caller: the default fabric link (the catalog's
    ``ib-ndr`` port at the ``quantum2-qm9700`` hop latency), the system names and their loader."""

    link: LinkParams
    systems: Sequence[str]
    load_system: Callable[[str], SystemSpec]


LINK_KEYS = ("gbps", "leaf_gbps", "latency")
FABRIC_KEYS = (*LINK_KEYS, "spine_gbps")  # keys every switched-fabric builder accepts
TIER_HELP = (
    "per tier: gbps= (or leaf_gbps=, host links, Gb/s), spine_gbps= (switch-switch links), core_gbps= "
    "(3-tier Clos aggregation-core), global_gbps= (dragonfly global links), latency= (every link: 1us, 500ns)"
)


def _latency(params: dict[str, str], known: TopologyCatalog) -> float:
    return parse_duration(params["latency"], "latency") if "latency" in params else known.link.latency_s


def _default_link(params: dict[str, str], known: TopologyCatalog) -> LinkParams:
    """The host links: ``gbps`` (default the catalog port's rate) at ``latency`` per hop."""
    if "gbps" in params and "leaf_gbps" in params:
        raise FabricsimError("leaf_gbps", "is another name of gbps (the host links' rate)", "give one of them")
    key = "leaf_gbps" if "leaf_gbps" in params else "gbps"
    rate = gbit_to_Bps(_number(params, key, float)) if key in params else known.link.capacity_Bps
    return LinkParams(rate, _latency(params, known))


def _spine_link(params: dict[str, str], known: TopologyCatalog, key: str = "spine_gbps") -> LinkParams | None:
    """The links of the tier ``key`` names (``spine_gbps``, ``core_gbps``, ``global_gbps``) when it
    is given (at ``latency``), else None (the builder's default for that tier)."""
    if key not in params:
        return None
    return LinkParams(gbit_to_Bps(_number(params, key, float)), _latency(params, known))


def _number(params: dict[str, str], key: str, kind: type = int, default: float | None = None):
    """A finite, positive number from the string; integers at most the host cap (no larger port
    count or dimension can build a topology within it)."""
    if key not in params:
        if default is None:
            raise FabricsimError(key, "is required", f"add {key}=... to the topology string")
        return kind(default)
    try:
        value = kind(params[key])
    except ValueError:
        raise FabricsimError(key, f"must be a number, got {params[key][:40]!r}") from None
    if kind is float and not math.isfinite(value):
        raise FabricsimError(key, f"must be a finite number, got {params[key]!r}")
    if value <= 0:
        raise FabricsimError(key, f"must be positive, got {params[key]}", "zero ports make no network")
    if kind is int:
        check_cap(key, value, "HOSTS")
    return value


def _size(nodes: int, cables: int) -> None:
    """Refuse a topology of more nodes (hosts + switches) or cables than the caps allow."""
    check_cap("topology nodes", nodes, "HOSTS")
    check_cap("topology cables", cables, "FLOWS")


def _split(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.strip().partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep and not params and _DIMS.fullmatch(item):  # a bare shape first: ocs-torus:4x4x8
            key, sep, value = "dims", "=", item
        if not sep:
            raise FabricsimError("topology", f"parameter {item!r} is not key=value", "e.g. fat-tree:k=8")
        params[key.strip().replace("-", "_")] = value.strip()
    return name.strip(), params


_DIMS = re.compile(r"\d+(x\d+)+", re.IGNORECASE)


def _fat_tree(p: dict[str, str], known: TopologyCatalog) -> Topology:
    hosts = _number(p, "hosts") if "hosts" in p else None
    k = _number(p, "k")
    _size(k**3 // 4 + 5 * k * k // 4, 3 * k**3 // 4)
    return fat_tree(k, _default_link(p, known), hosts, _spine_link(p, known), _spine_link(p, known, "core_gbps"))


def _leaf_spine(p: dict[str, str], known: TopologyCatalog) -> Topology:
    leaves, spines, per_leaf = _number(p, "leaves"), _number(p, "spines"), _number(p, "hosts_per_leaf")
    _size(leaves * per_leaf + leaves + spines, leaves * (per_leaf + spines))
    if "radix" in p and per_leaf + spines > _number(p, "radix"):
        raise FabricsimError(
            "hosts_per_leaf", f"{per_leaf} hosts + {spines} uplinks exceed the leaf radix {p['radix']}"
        )
    oversubscription = _number(p, "oversubscription", float, 1.0)
    return leaf_spine(leaves, spines, per_leaf, _default_link(p, known), oversubscription, _spine_link(p, known))


def _rail(p: dict[str, str], known: TopologyCatalog) -> Topology:
    spec = RailSpec(
        _number(p, "nodes"),
        _number(p, "rails", int, 8),
        _number(p, "radix", int, 64),
        _default_link(p, known),
        _number(p, "oversubscription", float, 1.0),
        _spine_link(p, known),
        core=_spine_link(p, known, "core_gbps"),
    )
    nics = spec.nodes * spec.rails
    _size(2 * nics, 2 * nics)  # NICs, and at most one leaf port and one uplink share per NIC
    return rail_optimized(spec)


def _dragonfly(p: dict[str, str], known: TopologyCatalog) -> Topology:
    a, hosts, h = _number(p, "a"), _number(p, "p"), _number(p, "h")
    groups = a * h + 1
    _size(groups * a * (hosts + 1), groups * (a * hosts + a * (a - 1) // 2 + a * h))
    link = _default_link(p, known)
    local = _spine_link(p, known)
    global_link = _spine_link(p, known, "global_gbps")
    routers = None if global_link is None else (local or link, global_link)
    return dragonfly(a, hosts, h, link, routers or local)


def _torus(p: dict[str, str], known: TopologyCatalog) -> Topology:
    try:
        dims = tuple(int(d) for d in p.get("dims", "").lower().split("x"))
    except ValueError:
        raise FabricsimError("dims", f"must look like 8x8 or 8x8x8, got {p.get('dims', '')[:40]!r}") from None
    if len(dims) > 3 or any(d < 1 for d in dims):
        raise FabricsimError("dims", f"needs 1 to 3 positive sizes, got {p.get('dims')!r}", "e.g. dims=8x8x8")
    count = math.prod(dims)
    _size(2 * count, count * (1 + len(dims)))
    return torus(dims, _default_link(p, known), _spine_link(p, known))


def _slice_shape(p: dict[str, str]) -> tuple[tuple[int, ...], bool]:
    """``dims`` and ``twisted`` of an ``ocs-torus`` string, checked (:func:`fabricsim.topology.ocs.check_slice`)."""
    try:
        dims = tuple(int(d) for d in p.get("dims", "").lower().split("x"))
    except ValueError:
        raise FabricsimError("dims", f"must look like 4x4x8, got {p.get('dims', '')[:40]!r}") from None
    twisted = p.get("twisted", "0")
    if twisted not in ("0", "1"):
        raise FabricsimError("twisted", f"must be 0 or 1, got {twisted[:20]!r}", "e.g. ocs-torus:4x4x8,twisted=1")
    check_slice(dims, twisted == "1")
    return dims, twisted == "1"


def ocs_slice_request(text: str | None) -> tuple[tuple[int, ...], bool] | None:
    """The slice shape and twist ``ocs-torus:DxDxD[,twisted=0|1]`` asks for as a job's own fabric
    (``train``/``infer`` on an OCS system, whose ICI link it uses: no ``system=`` or ``latency=``);
    None for any other topology string (``ocs-torus:auto`` included: the planner's)."""
    if text is None:
        return None
    name, _, rest = text.strip().partition(":")
    if name.strip() != "ocs-torus" or "auto" in (p.strip() for p in rest.split(",")):
        return None
    name, params = _split(text)
    _check_keys(name, params, ("dims", "twisted"))
    try:
        return _slice_shape(params)
    except FabricsimError as exc:
        raise _as_topology_error(name, exc) from None


def _ocs_torus(p: dict[str, str], known: TopologyCatalog) -> Topology:
    """A TPU slice's torus of whole 4x4x4 cubes joined by OCS (:mod:`fabricsim.topology.ocs`), the
    ICI link and chip bandwidth of ``system=`` (default tpu-v5p), ``twisted=0|1``."""
    dims, twisted = _slice_shape(p)
    name = p.get("system", DEFAULT_OCS_SYSTEM)
    if name not in known.systems:
        raise unknown_name("system", name, known.systems)
    up = known.load_system(name).scale_up
    if not up.torus:
        raise FabricsimError("system", f"{name} has no torus scale-up domain", "e.g. system=tpu-v5p")
    count = math.prod(dims)
    _size(2 * count, count * (1 + len(dims)))
    latency = parse_duration(p["latency"], "latency") if "latency" in p else up.link.latency_s
    return ocs_torus(dims, twisted, LinkParams(up.link.bandwidth_Bps, latency), up.bandwidth_Bps)


def _nvswitch(p: dict[str, str], known: TopologyCatalog) -> Topology:
    name = p.get("system", DEFAULT_NVSWITCH_SYSTEM)
    if name not in known.systems:
        raise unknown_name("system", name, known.systems)
    scale_up = known.load_system(name).scale_up
    if scale_up.switch is None:
        raise FabricsimError("system", f"{name} has no NVSwitch in its scale-up domain", "e.g. system=dgx-h100")
    gpus = _number(p, "gpus", int, scale_up.domain_gpus)
    _size(gpus + 1, gpus)
    link = LinkParams(scale_up.bandwidth_Bps, parse_duration(p["latency"], "latency") if "latency" in p
                      else scale_up.link.latency_s)  # fmt: skip
    return nvswitch_domain(gpus, link, reduction=scale_up.in_network_reduction)


def _nvl72(p: dict[str, str], known: TopologyCatalog) -> Topology:
    if "latency" not in p:
        return nvl72_domain()
    return nvl72_domain(LinkParams(nvl72_domain().line_rate_Bps, parse_duration(p["latency"], "latency")))


BUILDERS: dict[str, Callable[[dict[str, str], TopologyCatalog], Topology]] = {
    "fat-tree": _fat_tree,
    "leaf-spine": _leaf_spine,
    "rail-optimized": _rail,
    "dragonfly": _dragonfly,
    "torus": _torus,
    "nvswitch": _nvswitch,
    "nvl72": _nvl72,
    "ocs-torus": _ocs_torus,
}

# the keys each builder reads; an NVSwitch domain has no switch-to-switch links (no spine_gbps)
BUILDER_KEYS: dict[str, tuple[str, ...]] = {
    "fat-tree": ("k", "hosts", *FABRIC_KEYS, "core_gbps"),
    "leaf-spine": ("leaves", "spines", "hosts_per_leaf", "radix", "oversubscription", *FABRIC_KEYS),
    "rail-optimized": ("nodes", "rails", "radix", "oversubscription", *FABRIC_KEYS, "core_gbps"),
    "dragonfly": ("a", "p", "h", *FABRIC_KEYS, "global_gbps"),
    "torus": ("dims", *FABRIC_KEYS),
    "nvswitch": ("gpus", "system", "latency"),
    "nvl72": ("latency",),
    "ocs-torus": ("dims", "twisted", "system", "latency"),
}


def _check_keys(name: str, params: dict[str, str], allowed: tuple[str, ...]) -> None:
    unknown = [key for key in params if key not in allowed]
    if unknown:
        raise FabricsimError("topology", f"{name} has no parameter {unknown[0]!r}", f"use {', '.join(allowed)}")


def _as_topology_error(name: str, exc: FabricsimError) -> FabricsimError:
    """``exc``, about a key of the string (``dims``, ``k``), as an error of the string itself: the
    ``topology`` option or argument it came from, the builder and key in the message (a bare
    ``dims:`` names no option the user can find; ``gpus:`` would name another one)."""
    if exc.field.startswith("topology"):  # already the string's ("topology nodes" caps too)
        return exc
    return FabricsimError("topology", f"{name} {exc.field}: {exc.problem}", exc.fix)


def parse_topology(text: str, known: TopologyCatalog) -> Topology:
    """Build the topology a builder string (or a system name of ``known``) describes; see module
    doc. Every error names ``topology`` (:func:`_as_topology_error`)."""
    name, params = _split(text)
    try:
        if name in BUILDERS:
            _check_keys(name, params, BUILDER_KEYS[name])
            return BUILDERS[name](params, known)
        if name in known.systems:
            _check_keys(name, params, ("gpus",))
            system = known.load_system(name)
            gpus = _number(params, "gpus", int, DEFAULT_SYSTEM_GPUS)
            _size(3 * gpus, 3 * gpus)  # GPUs, NICs/ports and switches of each scale-up and scale-out tier
            return build_system_topology(system, gpus)
    except FabricsimError as exc:
        raise _as_topology_error(name, exc) from None
    raise unknown_name("topology", name, [*BUILDERS, *known.systems])
