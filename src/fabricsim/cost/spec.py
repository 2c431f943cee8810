"""Power and price data of cluster components, and the cluster a cost is asked for (layer L8).

Watts and USD. Built by ``fabricsim.api.cost`` from ``catalog/data/cost/components.yaml``
(every number there has a source); prices are optional (``None``: unknown).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import Field, NonNegativeFloat, PositiveFloat, model_validator

from fabricsim.specs.base import FrozenSpec
from fabricsim.topology.clos_counts import Inventory


class Cooling(StrEnum):
    AIR = "air"
    LIQUID = "liquid"


class Optics(StrEnum):
    """Pluggable transceivers at every optical cable end, or co-packaged optics on switch ports
    (the NIC end stays pluggable)."""

    PLUGGABLE = "pluggable"
    CPO = "cpo"


class Load(StrEnum):
    """max: nameplate; train/infer: busy at the measured fraction of nameplate; idle: GPUs idle."""

    MAX = "max"
    TRAIN = "train"
    INFER = "infer"
    IDLE = "idle"


class Medium(StrEnum):
    DAC = "dac"
    AEC = "aec"
    FIBER = "fiber"


class Priced(FrozenSpec):
    power_W: NonNegativeFloat = 0.0
    price_usd: NonNegativeFloat | None = None


class GpuPrice(FrozenSpec):
    price_usd: NonNegativeFloat | None = None


class SystemPower(FrozenSpec):
    node_max_W: PositiveFloat = Field(description="rated server maximum, NICs and their transceivers included")
    cooling: Cooling = Cooling.AIR
    host_price_usd: NonNegativeFloat | None = None


class OpticsPort(FrozenSpec):
    """One optical cable end at one port speed."""

    pluggable_W: NonNegativeFloat
    cpo_W: NonNegativeFloat | None = None
    pluggable_price_usd: NonNegativeFloat | None = None
    cpo_price_usd: NonNegativeFloat | None = None


class CableMedium(FrozenSpec):
    power_W_per_end: NonNegativeFloat = 0.0
    price_usd: NonNegativeFloat | None = None


class Facility(FrozenSpec):
    pue_air: float = Field(ge=1.0, le=3.0)
    pue_liquid: float = Field(ge=1.0, le=3.0)

    def pue(self, cooling: Cooling) -> float:
        return self.pue_liquid if cooling == Cooling.LIQUID else self.pue_air


class LoadFractions(FrozenSpec):
    train_fraction: float = Field(gt=0.0, le=1.0)
    infer_fraction: float = Field(gt=0.0, le=1.0)
    gpu_idle_fraction: float = Field(ge=0.0, le=1.0)


class CostCatalog(FrozenSpec):
    """Everything ``components.yaml`` holds; ``sources`` maps dotted paths to their source."""

    facility: Facility
    load: LoadFractions
    systems: dict[str, SystemPower]
    gpus: dict[str, GpuPrice]
    nics: dict[str, Priced]
    switches: dict[str, Priced]
    optics: dict[int, OpticsPort]
    cables: dict[Medium, CableMedium]
    media: dict[str, dict[str, Medium]]
    sources: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _media_known(self) -> CostCatalog:
        missing = {m for family in self.media.values() for m in family.values()} - set(self.cables)
        if missing:
            raise ValueError(f"media use cables with no entry: {sorted(missing)}")
        return self


@dataclass(frozen=True, slots=True)
class Cluster:
    """The cluster a cost is asked for: ``gpus`` GPUs in ``nodes`` servers, their scale-out
    ``fabric`` (inventory of a topology whose endpoints are the NIC ports), component names
    for the catalog lookups and the choices (optics, cooling, media family)."""

    system: str
    device: str
    gpus: int
    nodes: int
    gpus_per_node: int
    nics_per_node: int
    gpu_tdp_W: float
    nic: str
    switch: str
    switch_radix: int
    port_gbps: int
    fabric: Inventory | None
    optics: Optics = Optics.PLUGGABLE
    cooling: Cooling = Cooling.AIR
    media_family: str = "rail"
