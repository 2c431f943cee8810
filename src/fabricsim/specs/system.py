"""A cluster system: a device, nodes, a scale-up domain and a scale-out fabric (layer L1)."""

from enum import Enum

from pydantic import Field, PositiveInt, model_validator

from fabricsim.errors import FabricsimError
from fabricsim.specs.base import FrozenSpec
from fabricsim.specs.calibration import CollectiveFit
from fabricsim.specs.device import DeviceSpec
from fabricsim.specs.fabric import LinkSpec, ScaleOutSpec, ScaleUpSpec, TopologyKind
from fabricsim.specs.memory_tier import MemoryTierKind, MemoryTierSpec


class CpuVendor(str, Enum):
    """Host CPU vendor; NCCL's LL bandwidth caps differ by vendor for multi-node groups."""

    INTEL = "intel"
    AMD = "amd"
    ARM = "arm"


class SystemSpec(FrozenSpec):
    """A homogeneous cluster. GPUs are numbered node-major: GPU g is on node g // gpus_per_node,
    and in scale-up domain g // scale_up.domain_gpus."""

    name: str
    description: str = ""
    device: DeviceSpec
    gpus_per_node: PositiveInt
    scale_up: ScaleUpSpec
    scale_out: ScaleOutSpec
    host_link: LinkSpec
    cpu_vendor: CpuVendor = CpuVendor.INTEL
    max_gpus: PositiveInt = 100_000
    memory_tiers: dict[MemoryTierKind, MemoryTierSpec] = Field(default_factory=dict)
    sources: dict[str, str] = Field(default_factory=dict)
    collective_fits: tuple[CollectiveFit, ...] = ()  # measured (nccl-tests) lines; see specs.calibration

    @model_validator(mode="after")
    def _domain_holds_whole_nodes(self) -> "SystemSpec":
        if self.scale_up.domain_gpus % self.gpus_per_node:
            raise ValueError("scale_up.domain_gpus must be a multiple of gpus_per_node")
        if self.scale_up.full_mesh and self.scale_out.topology is TopologyKind.RAIL_ONLY:
            # rail-only forwards cross-rail traffic through the scale-up switch, which a mesh lacks
            raise ValueError("a full-mesh scale-up domain cannot use a rail-only scale-out network")
        return self

    def check_gpu_count(self, gpus: int, field: str = "gpus") -> None:
        """Raise unless ``gpus`` is a count this system can provide: a divisor of a node
        (1, 2, 4, 8 on DGX) or a whole number of nodes, at most ``max_gpus``."""
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus <= 0:
            raise FabricsimError(field, f"must be a positive integer, got {gpus!r}")
        if gpus > self.max_gpus:
            raise FabricsimError(field, f"{gpus} exceeds the {self.max_gpus} GPUs of {self.name}")
        node = self.gpus_per_node
        if gpus < node and node % gpus == 0:
            return
        if gpus % node:
            raise FabricsimError(
                field,
                f"{gpus} GPUs is not a whole number of {node}-GPU nodes of {self.name}",
                f"use a divisor of {node} or a multiple of {node}",
            )

    def memory_tier(self, kind: MemoryTierKind) -> MemoryTierSpec:
        """The tier ``kind`` of this system; FabricsimError naming ``offload-tier`` if it has none."""
        tier = self.memory_tiers.get(kind)
        if tier is None:
            known = ", ".join(k.value for k in self.memory_tiers) or "none"
            raise FabricsimError(
                "offload-tier",
                f"{self.name} has no {kind.value} memory tier (it has: {known})",
                "pick another tier or add memory_tiers to the system YAML",
            )
        return tier

    def nodes(self, gpus: int) -> int:
        return max(1, -(-gpus // self.gpus_per_node))
