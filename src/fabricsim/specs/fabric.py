"""Links, NICs, switches and the two fabric tiers of a system (layer L1).

Bandwidths are bytes/s **per direction**; vendor bidirectional figures are halved in the catalog.
"""

from __future__ import annotations

from enum import Enum

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from fabricsim.specs.base import FrozenSpec


class LinkKind(str, Enum):
    NVLINK = "nvlink"
    PCIE = "pcie"
    CXL = "cxl"
    INFINIBAND = "infiniband"
    ROCE = "roce"


class TopologyKind(str, Enum):
    FAT_TREE = "fat-tree"
    RAIL_OPTIMIZED = "rail-optimized"
    RAIL_ONLY = "rail-only"
    LEAF_SPINE = "leaf-spine"
    DRAGONFLY = "dragonfly"
    TORUS = "torus"


class LinkSpec(FrozenSpec):
    """A link or NIC port: ``bandwidth_Bps`` per direction, ``latency_s`` one-way end to end."""

    name: str
    kind: LinkKind
    bandwidth_Bps: PositiveFloat
    latency_s: NonNegativeFloat
    sources: dict[str, str] = Field(default_factory=dict)


class SwitchSpec(FrozenSpec):
    """A switch ASIC/box: radix ports of ``port_bandwidth_Bps`` each (per direction)."""

    name: str
    radix: PositiveInt
    port_bandwidth_Bps: PositiveFloat
    latency_s: NonNegativeFloat
    in_network_reduction: bool = Field(description="SHARP (IB) or NVLS (NVSwitch) capable")
    buffer_bytes: PositiveFloat | None = Field(
        default=None,
        description="packet buffer of one box (on-chip shared SRAM, or on-chip + HBM for deep-buffer VOQ "
        "switches); None: not published. Catalog data only: the packet model takes its buffer from its own "
        "parameters (network/packet/params.py)",
    )
    sources: dict[str, str] = Field(default_factory=dict)


class ScaleUpSpec(FrozenSpec):
    """The NVLink/NVSwitch domain: ``domain_gpus`` GPUs reach each other at ``bandwidth_Bps`` each."""

    domain_gpus: PositiveInt
    link: LinkSpec
    bandwidth_Bps: PositiveFloat = Field(description="per GPU, per direction, all NVLinks together")
    switch: SwitchSpec | None = None

    @property
    def in_network_reduction(self) -> bool:
        return self.switch is not None and self.switch.in_network_reduction


class ScaleOutSpec(FrozenSpec):
    """The network between scale-up domains: ``nics_per_node`` NICs of ``nic`` per node.

    ``topology_params``: the shape of a dragonfly or torus in the topology builder's syntax
    (``a=8,p=4,h=4`` or ``dims=8x8x8``; see :mod:`fabricsim.topology.system` for the default).
    """

    nic: LinkSpec
    nics_per_node: PositiveInt
    switch: SwitchSpec
    topology: TopologyKind = TopologyKind.RAIL_OPTIMIZED
    topology_params: str | None = None
    oversubscription: PositiveFloat = 1.0
    in_network_reduction: bool = False

    @property
    def bandwidth_per_node_Bps(self) -> float:
        return self.nic.bandwidth_Bps * self.nics_per_node
