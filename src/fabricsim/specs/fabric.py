"""Links, NICs, switches and the two fabric tiers of a system (layer L1).

Bandwidths are bytes/s **per direction**; vendor bidirectional figures are halved in the catalog.
"""

import math
from enum import Enum

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt, model_validator

from fabricsim.specs.base import FrozenSpec


class LinkKind(str, Enum):
    NVLINK = "nvlink"
    PCIE = "pcie"
    CXL = "cxl"
    INFINIBAND = "infiniband"
    ROCE = "roce"
    INFINITY_FABRIC = "infinity-fabric"  # AMD xGMI GPU-to-GPU links
    ICI = "ici"  # Google TPU inter-chip interconnect
    NEURONLINK = "neuronlink"  # AWS Trainium chip-to-chip links


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


class ScaleUpTopology(str, Enum):
    """How a scale-up domain's GPUs are wired: through a switch (NVSwitch, NVL72 trays), or as a
    full mesh of point-to-point links with no switch (AMD Instinct 8-GPU nodes over Infinity
    Fabric, Intel Gaudi 3 nodes over on-die RoCE ports)."""

    SWITCH = "switch"
    FULL_MESH = "full-mesh"
    TORUS = "torus"  # Google TPU ICI (3D on v4/v5p, 2D on v5e/v6e), AWS Trainium2 NeuronLink


class ScaleUpSpec(FrozenSpec):
    """The scale-up domain: ``domain_gpus`` GPUs reach each other at ``bandwidth_Bps`` each.

    ``topology: full-mesh``: no switch; every GPU pair has its own links, an equal share of the
    GPU's ``bandwidth_Bps`` (:attr:`peer_Bps`), so a GPU reaches its ``domain_gpus - 1`` peers at
    once but any one peer at only that share.

    ``topology: torus``: no switch; the domain is a torus of shape ``dims`` (x fastest: GPU g of a
    domain sits at x = g % dims[0], y = g // dims[0] % dims[1], ...), each GPU cabled to its two
    neighbours along every dimension (wraparound included) by one ``link`` each, at the link's
    per-direction bandwidth; a dimension of 2 is one link between the pair, of 1 none.
    ``dim_link_Bps``: per dimension, that dimension's link bandwidth per direction where the
    dimensions differ (a Trn2 UltraServer: NeuronLink inside an instance, slower links across the
    four instances); None: every dimension at ``link.bandwidth_Bps``."""

    domain_gpus: PositiveInt
    link: LinkSpec
    bandwidth_Bps: PositiveFloat = Field(description="per GPU, per direction, all NVLinks together")
    switch: SwitchSpec | None = None
    topology: ScaleUpTopology = ScaleUpTopology.SWITCH
    dims: tuple[PositiveInt, ...] | None = Field(default=None, description="torus shape, x fastest")
    dim_link_Bps: tuple[PositiveFloat, ...] | None = Field(default=None, description="per torus dimension")

    @model_validator(mode="after")
    def _mesh_has_no_switch(self) -> "ScaleUpSpec":
        if self.topology is not ScaleUpTopology.SWITCH and self.switch is not None:
            raise ValueError(f"a {self.topology.value} scale-up domain has no switch: leave scale_up.switch out")
        if (self.dims is not None) != (self.topology is ScaleUpTopology.TORUS):
            raise ValueError("scale_up.dims gives the shape of a torus domain: give it with topology: torus only")
        if self.dims is not None and math.prod(self.dims) != self.domain_gpus:
            raise ValueError(f"scale_up.dims {list(self.dims)} hold {math.prod(self.dims)} GPUs, not domain_gpus")
        if self.dim_link_Bps is not None and len(self.dim_link_Bps) != len(self.dims or ()):
            raise ValueError("scale_up.dim_link_Bps needs one bandwidth per torus dimension (dims)")
        return self

    @property
    def torus_link_Bps(self) -> tuple[float, ...]:
        """Per torus dimension, one link's bytes/s per direction (() when not a torus)."""
        if self.dims is None:
            return ()
        return tuple(self.dim_link_Bps or (self.link.bandwidth_Bps,) * len(self.dims))

    @property
    def torus(self) -> bool:
        return self.topology is ScaleUpTopology.TORUS

    @property
    def full_mesh(self) -> bool:
        return self.topology is ScaleUpTopology.FULL_MESH

    @property
    def peer_Bps(self) -> float:
        """Bytes/s per direction between one GPU pair: the GPU's bandwidth over its peers on a full
        mesh (one or more links per pair), the whole bandwidth through a switch."""
        if self.full_mesh and self.domain_gpus > 1:
            return self.bandwidth_Bps / (self.domain_gpus - 1)
        return self.bandwidth_Bps

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
