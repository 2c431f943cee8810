"""Bill of materials of a cluster and its scale-out fabric (layer L8).

GPUs, servers and NICs come from the cluster; switches by tier and cables by class from the
fabric's :class:`~fabricsim.topology.inventory.Inventory`. Each cable class gets a medium from the
catalog's media policy (``dac``, ``aec`` or ``fiber``); every fibre end holds a pluggable
transceiver, except that with co-packaged optics the *switch* ends are CPO ports (NICs keep a
pluggable module: CPO is a switch technology). An access cable has one NIC end and one switch
end; every other fabric cable has two switch ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.cost.spec import Cluster, Medium, Optics

FABRIC_CLASSES_SKIPPED = ("host", "scale-up", "other")  # inside a server or NVLink domain: part of the node


@dataclass(frozen=True, slots=True)
class CableLine:
    cable_class: str
    medium: Medium
    count: int


@dataclass(frozen=True, slots=True)
class Bom:
    """Counts. ``transceivers``: pluggable optical modules (NIC ends + switch ends unless CPO);
    ``nic_transceivers`` of them sit in the servers; ``cpo_ports``: optical switch ports with
    co-packaged optics; ``aec_ends``: powered ends of active copper cables."""

    gpus: int
    nodes: int
    nics: int
    switch_model: str
    switches_by_tier: tuple[int, ...]
    ports_by_tier: tuple[int, ...]
    cables: tuple[CableLine, ...]
    transceivers: int
    nic_transceivers: int
    cpo_ports: int
    aec_ends: int
    port_gbps: int

    @property
    def switches(self) -> int:
        return sum(self.switches_by_tier)

    def to_json(self) -> dict[str, object]:
        return {
            "gpus": self.gpus,
            "nodes": self.nodes,
            "nics": self.nics,
            "switch_model": self.switch_model,
            "switches": {f"tier{t}": n for t, n in enumerate(self.switches_by_tier, start=1)},
            "switches_total": self.switches,
            "switch_ports_used": {f"tier{t}": n for t, n in enumerate(self.ports_by_tier, start=1)},
            "cables": {line.cable_class: {"medium": line.medium.value, "count": line.count} for line in self.cables},
            "transceivers": self.transceivers,
            "cpo_ports": self.cpo_ports,
            "aec_ends": self.aec_ends,
            "port_gbps": self.port_gbps,
        }


def _lines(cluster: Cluster, media: dict[str, Medium]) -> tuple[CableLine, ...]:
    if cluster.fabric is None:
        return ()
    lines = []
    for cable_class, count in cluster.fabric.cables:
        if cable_class in FABRIC_CLASSES_SKIPPED:
            continue
        if cable_class == "access":  # a fabric built larger than the cluster: only used ports are cabled
            count = min(count, cluster.nodes * cluster.nics_per_node)
        lines.append(CableLine(cable_class, media.get(cable_class, Medium.FIBER), count))
    return tuple(lines)


def _ends(lines: tuple[CableLine, ...], medium: Medium) -> tuple[int, int]:
    """(NIC ends, switch ends) of the cables of ``medium``."""
    nic = sum(line.count for line in lines if line.medium == medium and line.cable_class == "access")
    switch = sum(line.count * (1 if line.cable_class == "access" else 2) for line in lines if line.medium == medium)
    return nic, switch


def bill_of_materials(cluster: Cluster, media: dict[str, Medium]) -> Bom:
    """Count the cluster's components; ``media`` maps cable class -> medium (default fibre)."""
    lines = _lines(cluster, media)
    nic_fibre, switch_fibre = _ends(lines, Medium.FIBER)
    nic_aec, switch_aec = _ends(lines, Medium.AEC)
    cpo = cluster.optics == Optics.CPO
    has_fabric = cluster.fabric is not None
    return Bom(
        gpus=cluster.gpus,
        nodes=cluster.nodes,
        nics=cluster.nodes * cluster.nics_per_node if has_fabric else 0,
        switch_model=cluster.switch if has_fabric else "",
        switches_by_tier=cluster.fabric.switches_by_tier if cluster.fabric is not None else (),
        ports_by_tier=cluster.fabric.ports_by_tier if cluster.fabric is not None else (),
        cables=lines,
        transceivers=nic_fibre + (0 if cpo else switch_fibre),
        nic_transceivers=nic_fibre,
        cpo_ports=switch_fibre if cpo else 0,
        aec_ends=nic_aec + switch_aec,
        port_gbps=cluster.port_gbps,
    )
