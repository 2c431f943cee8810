"""Memory tiers below HBM and what a training step offloads to them (layer L1).

A :class:`MemoryTierSpec` is memory a GPU reaches over a link: host DRAM over PCIe, a Grace CPU's
LPDDR5X over NVLink-C2C, or a CXL memory pool over CXL. Its ``capacity_bytes`` and
``memory_bandwidth_Bps`` are shared by ``gpus`` GPUs (a node's GPUs for host DRAM, a superchip's
for Grace memory, a pool's for CXL); its ``link`` is shared by ``gpus_per_link`` GPUs (two A100s
sit behind one PCIe Gen4 switch uplink in a DGX A100). Per-GPU figures divide by those counts.

An :class:`OffloadSpec` says which tensor classes of a training step live on which tier: the
optimizer (fp32 master weights, Adam moments and the fp32 gradient shard this GPU updates, with
the Adam step on the CPU, as ZeRO-Offload and Megatron-Core's CPU optimizer do), the 16-bit
weights (streamed in per layer, as ZeRO-Infinity) and the stored activations (written out in the
forward pass and read back for the backward pass, as activation offloading does).
"""

from dataclasses import dataclass
from enum import Enum

from pydantic import Field, NonNegativeFloat, PositiveFloat, PositiveInt

from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.specs.base import FrozenSpec
from fabricsim.specs.fabric import LinkSpec


class MemoryTierKind(str, Enum):
    """Where offloaded tensors go: host DRAM, Grace LPDDR5X or a CXL pool."""

    HOST = "host"
    GRACE = "grace"
    CXL = "cxl"


class OffloadClass(str, Enum):
    """Tensor classes a training step can keep off the GPU."""

    OPTIMIZER = "optimizer"
    WEIGHTS = "weights"
    ACTIVATIONS = "activations"


OFFLOAD_ORDER = (OffloadClass.OPTIMIZER, OffloadClass.WEIGHTS, OffloadClass.ACTIVATIONS)


class MemoryTierSpec(FrozenSpec):
    """Memory behind a link: capacity and DRAM bandwidth shared by ``gpus`` GPUs; the link
    (bandwidth per direction) shared by ``gpus_per_link`` GPUs."""

    capacity_bytes: PositiveFloat
    memory_bandwidth_Bps: PositiveFloat = Field(description="peak DRAM bandwidth of the tier, all its GPUs together")
    gpus: PositiveInt = Field(description="GPUs sharing the capacity and the DRAM bandwidth")
    link: LinkSpec
    gpus_per_link: PositiveInt = 1
    sources: dict[str, str] = Field(default_factory=dict)

    @property
    def capacity_per_gpu_bytes(self) -> float:
        return self.capacity_bytes / self.gpus

    @property
    def memory_bandwidth_per_gpu_Bps(self) -> float:
        return self.memory_bandwidth_Bps / self.gpus

    @property
    def link_bandwidth_per_gpu_Bps(self) -> float:
        """Per direction, with every GPU behind the link transferring at once."""
        return self.link.bandwidth_Bps / self.gpus_per_link


@dataclass(frozen=True, slots=True)
class OffloadSpec:
    """Tensor classes kept on ``tier`` instead of HBM (canonical order, no repeats)."""

    classes: tuple[OffloadClass, ...]
    tier: MemoryTierKind = MemoryTierKind.HOST

    def has(self, kind: OffloadClass) -> bool:
        return kind in self.classes

    def as_dict(self) -> dict[str, object]:
        return {"offload": [c.value for c in self.classes], "offload_tier": self.tier.value}

    @property
    def key(self) -> tuple[int, ...]:
        """Canonical order of offload choices (ties between plans): tier, then the classes."""
        return (list(MemoryTierKind).index(self.tier), *(int(c in self.classes) for c in OFFLOAD_ORDER))


def parse_offload(classes: object, tier: object = None) -> OffloadSpec | None:
    """An :class:`OffloadSpec` from ``"optimizer,weights"`` (or a list) and a tier name; None for
    no offload (None or ``"none"``). Raises FabricsimError naming ``offload``/``offload-tier``."""
    if classes is None:
        if tier is not None:
            raise FabricsimError("offload-tier", "given without --offload", "add --offload optimizer,weights,...")
        return None
    parts = classes.split(",") if isinstance(classes, str) else list(classes)  # type: ignore[call-overload]
    texts = [str(part).strip().lower() for part in parts]
    if texts == ["none"]:
        if tier is not None:
            raise FabricsimError("offload-tier", "given with --offload none", "drop --offload-tier")
        return None
    chosen: set[OffloadClass] = set()
    for text in texts:
        try:
            chosen.add(OffloadClass(text))
        except ValueError:
            if not text:
                raise FabricsimError("offload", f"has an empty entry in {classes!r}", _CLASSES_FIX) from None
            raise unknown_name("offload", text, [c.value for c in OffloadClass]) from None
    kind = MemoryTierKind.HOST
    if tier is not None:
        try:
            kind = MemoryTierKind(str(tier).strip().lower())
        except ValueError:
            raise unknown_name("offload-tier", str(tier), [k.value for k in MemoryTierKind]) from None
    return OffloadSpec(tuple(c for c in OFFLOAD_ORDER if c in chosen), kind)


_CLASSES_FIX = "list classes separated by commas: optimizer,weights,activations (or none)"


class KvPoolSpec(FrozenSpec):
    """A CXL memory pool that several hosts reach through a CXL switch (``fabricsim serve --kv-pool``):
    ``ports`` host ports of ``link`` (bandwidth per direction each), the pool's own ``bandwidth_Bps``
    (its DRAM behind the switch, all ports together, per direction), ``capacity_bytes`` and the
    load-to-use ``latency_s``. ``hosts`` servers share it; their GPUs (``hosts`` x the system's GPUs
    per node unless ``--pool-sharing`` says otherwise) contend for its bandwidth and capacity."""

    name: str
    link: LinkSpec
    ports: PositiveInt
    bandwidth_Bps: PositiveFloat = Field(description="the pool's bandwidth, all ports together, per direction")
    capacity_bytes: PositiveFloat
    latency_s: NonNegativeFloat
    hosts: PositiveInt = Field(description="servers attached to the pool")
    switch: str = Field(description="what attaches the hosts (the CXL switch or the box's own)")
    sources: dict[str, str] = Field(default_factory=dict)

    @property
    def port_bandwidth_Bps(self) -> float:
        """One host port, per direction: the most one transfer can get."""
        return self.link.bandwidth_Bps

    @property
    def shared_bandwidth_Bps(self) -> float:
        """What all sharers together get, per direction: the ports or the pool, whichever is less."""
        return min(self.ports * self.link.bandwidth_Bps, self.bandwidth_Bps)
