"""Capital cost (USD) of a bill of materials (layer L8). Every price is an estimate the user can
override; a component without a price makes the total unknown and is listed."""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.cost.bom import Bom
from fabricsim.cost.spec import Cluster, CostCatalog, Medium


@dataclass(frozen=True, slots=True)
class Capex:
    """USD per group; ``total`` None when any price in ``missing`` is unknown."""

    groups: tuple[tuple[str, float], ...]
    missing: tuple[str, ...]

    @property
    def total(self) -> float | None:
        return None if self.missing else sum(v for _, v in self.groups)

    @property
    def network(self) -> float:
        """Scale-out network: switches, optics and cables (NICs are with the servers)."""
        return sum(v for k, v in self.groups if k in ("switches", "optics", "cables"))

    def to_json(self) -> dict[str, object] | None:
        if self.missing:
            return None
        return {**dict(self.groups), "total": self.total}


def _line(missing: list[str], name: str, count: float, price: float | None) -> float:
    if count == 0:
        return 0.0
    if price is None:
        missing.append(name)
        return 0.0
    return count * price


def capex(cluster: Cluster, bom: Bom, catalog: CostCatalog) -> Capex:
    """Sum count x price per group: gpus, hosts, nics, switches, optics, cables."""
    missing: list[str] = []
    gpu = catalog.gpus.get(cluster.device)
    system = catalog.systems.get(cluster.system)
    nic = catalog.nics.get(cluster.nic)
    switch = catalog.switches.get(cluster.switch)
    port = catalog.optics.get(bom.port_gbps)
    used = min(1.0, cluster.gpus / (cluster.nodes * cluster.gpus_per_node))
    groups = {
        "gpus": _line(missing, f"gpus.{cluster.device}", bom.gpus, gpu.price_usd if gpu else None),
        "hosts": _line(
            missing, f"systems.{cluster.system}", bom.nodes * used, system.host_price_usd if system else None
        ),
        "nics": _line(missing, f"nics.{cluster.nic}", bom.nics, nic.price_usd if nic else None),
        "switches": _line(missing, f"switches.{cluster.switch}", bom.switches, switch.price_usd if switch else None),
        "optics": _line(
            missing, f"optics.{bom.port_gbps}", bom.transceivers, port.pluggable_price_usd if port else None
        )
        + _line(missing, f"optics.{bom.port_gbps}.cpo", bom.cpo_ports, port.cpo_price_usd if port else None),
        "cables": sum(
            _line(missing, f"cables.{line.medium.value}", line.count, _cable_price(catalog, line.medium))
            for line in bom.cables
        ),
    }
    return Capex(tuple(groups.items()), tuple(dict.fromkeys(missing)))


def _cable_price(catalog: CostCatalog, medium: Medium) -> float | None:
    entry = catalog.cables.get(medium)
    return entry.price_usd if entry is not None else None
