"""Builder strings -> topologies (layer L2): ``fat-tree:k=8``, ``leaf-spine:...``, ``dragonfly:...``,
``torus:dims=8x8x8``, ``rail-optimized:nodes=..,rails=..,radix=..``, ``nvswitch:gpus=8,system=dgx-h100``,
``nvl72``, or a catalog system name (``dgx-h100`` or ``dgx-h100:gpus=256``).

``nvswitch:`` is one scale-up domain of a catalog system (``system=``, default ``dgx-h100``): its
per-GPU scale-up bandwidth, link latency and NVLS capability, ``gpus=`` defaulting to the system's
domain size (8 on DGX, 72 on gb200-nvl72).

Links default to the catalog's InfiniBand NDR port (``ib-ndr``: 50 GB/s per direction) with the
Quantum-2 switch's port-to-port latency per hop; ``gbps=`` overrides the line rate (Gb/s).
"""

from __future__ import annotations

from collections.abc import Callable

from fabricsim import catalog
from fabricsim.errors import FabricsimError, unknown_name
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
from fabricsim.topology.system import build_system_topology
from fabricsim.units import gbit_to_Bps

DEFAULT_LINK = "ib-ndr"
DEFAULT_SWITCH = "quantum2-qm9700"
DEFAULT_SYSTEM_GPUS = 256
DEFAULT_NVSWITCH_SYSTEM = "dgx-h100"


def _default_link(params: dict[str, str]) -> LinkParams:
    latency_s = catalog.load_switch(DEFAULT_SWITCH).latency_s
    if "gbps" in params:
        return LinkParams(gbit_to_Bps(_number(params, "gbps", float)), latency_s)
    return LinkParams(catalog.load_link(DEFAULT_LINK).bandwidth_Bps, latency_s)


def _number(params: dict[str, str], key: str, kind: type = int, default: float | None = None):
    if key not in params:
        if default is None:
            raise FabricsimError(key, "is required", f"add {key}=... to the topology string")
        return kind(default)
    try:
        value = kind(params[key])
    except ValueError:
        raise FabricsimError(key, f"must be a number, got {params[key]!r}") from None
    if value <= 0:
        raise FabricsimError(key, f"must be positive, got {params[key]}", "zero ports make no network")
    return value


def _split(text: str) -> tuple[str, dict[str, str]]:
    name, _, rest = text.strip().partition(":")
    params: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise FabricsimError("topology", f"parameter {item!r} is not key=value", "e.g. fat-tree:k=8")
        params[key.strip().replace("-", "_")] = value.strip()
    return name.strip(), params


def _fat_tree(p: dict[str, str]) -> Topology:
    hosts = _number(p, "hosts") if "hosts" in p else None
    return fat_tree(_number(p, "k"), _default_link(p), hosts)


def _leaf_spine(p: dict[str, str]) -> Topology:
    leaves, spines, per_leaf = _number(p, "leaves"), _number(p, "spines"), _number(p, "hosts_per_leaf")
    if "radix" in p and per_leaf + spines > _number(p, "radix"):
        raise FabricsimError(
            "hosts_per_leaf", f"{per_leaf} hosts + {spines} uplinks exceed the leaf radix {p['radix']}"
        )
    return leaf_spine(leaves, spines, per_leaf, _default_link(p), _number(p, "oversubscription", float, 1.0))


def _rail(p: dict[str, str]) -> Topology:
    spec = RailSpec(
        _number(p, "nodes"),
        _number(p, "rails", int, 8),
        _number(p, "radix", int, 64),
        _default_link(p),
        _number(p, "oversubscription", float, 1.0),
    )
    return rail_optimized(spec)


def _torus(p: dict[str, str]) -> Topology:
    try:
        dims = tuple(int(d) for d in p.get("dims", "").lower().split("x"))
    except ValueError:
        raise FabricsimError("dims", f"must look like 8x8 or 8x8x8, got {p.get('dims')!r}") from None
    return torus(dims, _default_link(p))


def _nvswitch(p: dict[str, str]) -> Topology:
    name = p.get("system", DEFAULT_NVSWITCH_SYSTEM)
    if name not in catalog.names("systems"):
        raise unknown_name("system", name, catalog.names("systems"))
    scale_up = catalog.load_system(name).scale_up
    if scale_up.switch is None:
        raise FabricsimError("system", f"{name} has no NVSwitch in its scale-up domain", "e.g. system=dgx-h100")
    gpus = _number(p, "gpus", int, scale_up.domain_gpus)
    link = LinkParams(scale_up.bandwidth_Bps, scale_up.link.latency_s)
    return nvswitch_domain(gpus, link, reduction=scale_up.in_network_reduction)


BUILDERS: dict[str, Callable[[dict[str, str]], Topology]] = {
    "fat-tree": _fat_tree,
    "leaf-spine": _leaf_spine,
    "rail-optimized": _rail,
    "dragonfly": lambda p: dragonfly(_number(p, "a"), _number(p, "p"), _number(p, "h"), _default_link(p)),
    "torus": _torus,
    "nvswitch": _nvswitch,
    "nvl72": lambda p: nvl72_domain(),
}


def parse_topology(text: str) -> Topology:
    """Build the topology a builder string (or catalog system name) describes; see module doc."""
    name, params = _split(text)
    if name in BUILDERS:
        return BUILDERS[name](params)
    if name in catalog.names("systems"):
        system = catalog.load_system(name)
        return build_system_topology(system, _number(params, "gpus", int, DEFAULT_SYSTEM_GPUS))
    raise unknown_name("topology", name, [*BUILDERS, *catalog.names("systems")])
