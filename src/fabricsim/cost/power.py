"""Power of a cluster by component group at a load (layer L8). Watts.

Servers (``gpus``, ``hosts``, ``nics``) are split from the rated server maximum (DGX user guides):
gpus = GPUs x TDP, nics = adapters x adapter power, hosts = the rest of the nameplate (CPUs,
memory, NVSwitch, fans, PSU losses) less the NIC-side transceivers, which are counted under
``optics``. At ``train``/``infer`` load the server parts draw the measured fraction of nameplate
(catalog ``load``); at ``idle`` the GPUs draw ``gpu_idle_fraction`` x TDP and the rest stays busy.
Switches and optics draw the same at every load (their power barely moves with traffic).
``cooling`` = (PUE - 1) x the IT power, PUE by cooling kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.cost.bom import Bom
from fabricsim.cost.spec import Cluster, CostCatalog, Load, Medium
from fabricsim.errors import FabricsimError

GROUPS = ("gpus", "hosts", "nics", "switches", "optics", "cooling", "total")


@dataclass(frozen=True, slots=True)
class PowerBreakdown:
    """Watts per group; ``total`` is their sum (facility power, cooling included)."""

    gpus: float
    hosts: float
    nics: float
    switches: float
    optics: float
    cooling: float
    load: Load
    pue: float

    @property
    def it_W(self) -> float:
        return self.gpus + self.hosts + self.nics + self.switches + self.optics

    @property
    def total(self) -> float:
        return self.it_W + self.cooling

    @property
    def network_W(self) -> float:
        """Scale-out network: switches and all optics (the NICs are counted with the servers)."""
        return self.switches + self.optics

    def to_json(self) -> dict[str, float]:
        return {g: float(getattr(self, g)) for g in GROUPS}


def optics_W(bom: Bom, catalog: CostCatalog) -> tuple[float, float]:
    """(all optics W, NIC-side transceivers W) for ``bom``'s port speed."""
    if bom.transceivers == 0 and bom.cpo_ports == 0 and bom.aec_ends == 0:
        return 0.0, 0.0
    port = catalog.optics.get(bom.port_gbps)
    if port is None and (bom.transceivers or bom.cpo_ports):
        raise FabricsimError(
            "optics", f"no optics power for {bom.port_gbps} Gb/s ports", f"catalogued: {sorted(catalog.optics)} Gb/s"
        )
    pluggable = bom.transceivers * port.pluggable_W if port else 0.0
    cpo = 0.0
    if bom.cpo_ports:
        if port is None or port.cpo_W is None:
            raise FabricsimError("optics", f"no co-packaged optics at {bom.port_gbps} Gb/s", "use --optics pluggable")
        cpo = bom.cpo_ports * port.cpo_W
    aec = bom.aec_ends * catalog.cables[Medium.AEC].power_W_per_end if Medium.AEC in catalog.cables else 0.0
    nic_side = bom.nic_transceivers * port.pluggable_W if port else 0.0
    return pluggable + cpo + aec, nic_side


def _server_scale(catalog: CostCatalog, load: Load) -> float:
    fractions = catalog.load
    return {Load.MAX: 1.0, Load.TRAIN: fractions.train_fraction}.get(load, fractions.infer_fraction)


def cluster_power(cluster: Cluster, bom: Bom, catalog: CostCatalog, load: Load) -> PowerBreakdown:
    """Watts of ``cluster`` (counted in ``bom``) at ``load``; see the module docstring."""
    system = catalog.systems.get(cluster.system)
    if system is None:  # e.g. the AMD and Gaudi 3 nodes: no OEM publishes their rated maximum
        raise FabricsimError(
            "system",
            f"no node power for {cluster.system}: the server's rated maximum (node_max_W) is not published",
            f"add systems: {{{cluster.system}: {{node_max_W: WATTS}}}} in a --prices FILE.yaml; "
            f"catalogued: {', '.join(catalog.systems)}",
        )
    nic = catalog.nics.get(cluster.nic)
    if nic is None and cluster.nics_per_node:  # an unknown adapter is not a free one
        raise FabricsimError(
            "nic",
            f"no power data for {cluster.nic}",
            f"add nics: {{{cluster.nic}: {{power_W: WATTS}}}} in a --prices FILE.yaml; "
            f"known: {', '.join(catalog.nics)}",
        )
    nic_W = nic.power_W if nic is not None else 0.0
    optics, nic_optics = optics_W(bom, catalog)
    gpus = cluster.gpus * cluster.gpu_tdp_W
    nics = bom.nics * nic_W
    gpn = cluster.gpus_per_node
    residual = system.node_max_W - gpn * cluster.gpu_tdp_W - (nics + nic_optics) / cluster.nodes
    hosts = max(0.0, residual) * cluster.nodes * min(1.0, cluster.gpus / (cluster.nodes * gpn))
    scale = _server_scale(catalog, load)
    gpus_now = gpus * (catalog.load.gpu_idle_fraction if load == Load.IDLE else scale)
    switch = catalog.switches.get(cluster.switch)
    switches = bom.switches * (switch.power_W if switch is not None else 0.0)
    if bom.switches and switch is None:
        raise FabricsimError("switch", f"no power data for {cluster.switch}", f"known: {', '.join(catalog.switches)}")
    pue = catalog.facility.pue(cluster.cooling)
    it = gpus_now + hosts * scale + nics * scale + switches + optics
    return PowerBreakdown(gpus_now, hosts * scale, nics * scale, switches, optics, (pue - 1.0) * it, load, pue)
