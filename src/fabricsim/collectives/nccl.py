"""NCCL's tuning-model constants as versioned data, and the small tables built from them (layer L4).

The numbers live in ``data/nccl_<version>.yaml`` (NCCL 2.30.7 ``src/graph/tuning.cc``,
``src/graph/topo.h``, ``src/enqueue.cc``; see shared/reference/collective-cost-models.md), not in
code, because they change between NCCL releases (reference 1.9). :func:`constants` loads a version
once; everything returned is immutable. Latencies are converted to seconds, bandwidths to bytes/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from fabricsim.errors import FabricsimError
from fabricsim.textfile import load_shipped_yaml

DEFAULT_VERSION = "2.30"
_US = 1e-6
_GBPS = 1e9


@dataclass(frozen=True, slots=True)
class NcclConstants:
    """One NCCL release's tuning constants in SI units. Keys: algorithm, protocol, hardware names
    as in the YAML (``tree``, ``ring``, ``nvls``, ``nvls_tree``, ``collnet_direct``; ``LL``,
    ``LL128``, ``Simple``; ``nvlink``, ``pci``, ``net``)."""

    version: str
    base_latency_s: MappingProxyType
    hw_latency_s: MappingProxyType
    net_overhead_s: MappingProxyType
    net_overhead_simple_multiplier: float
    ll_max_single_node_Bps: MappingProxyType
    ll_max_multi_node_Bps: MappingProxyType
    nvls_efficiency: MappingProxyType
    nvls_channels: int
    nvls_chunk_bytes: tuple[int, ...]
    nvls_max_arity: int
    nvls_pipeline_stages: int
    nvls_step_hops: int
    nvlink_link_Bps: MappingProxyType
    protocol_bw_factor: MappingProxyType
    per_channel_max_Bps: MappingProxyType
    max_search_channels: int
    channel_duplication: int
    ring_plateau_factor_sm80: float
    ring_plateau_factor_older: float
    collnet_arity_serialization_s: float
    tree_correction: MappingProxyType
    p2p_chunk_bytes: MappingProxyType  # comm->p2pChunkSize by scale-up hardware (nvlink | pci), bytes
    p2p_min_part_divisor: int
    p2p_max_part_multiple: int
    p2p_channels_per_nvlink: int
    p2p_max_channels: int
    p2p_per_channel_Bps: float

    def tree_correction_factor(self, protocol: str, size_bytes: float) -> float:
        """NCCL's treeCorrectionFactor[protocol][log2(S/64)], linearly interpolated in log2(S) so
        that time stays continuous and monotone in size (NCCL itself steps at powers of two)."""
        table = self.tree_correction[protocol]
        x = math.log2(size_bytes / 64.0) if size_bytes > 64.0 else 0.0
        last = len(table) - 1
        if x >= last:
            return table[last]
        i = int(x)
        frac = x - i
        return table[i] + (table[i + 1] - table[i]) * frac

    def per_channel_cap_Bps(self, table: str, generation: str, domains: int) -> float:
        """NCCL's perChMax<table>Bws[generation][1 | 2 | >2 nodes] in bytes/s (0: no cap given)."""
        row = self.per_channel_max_Bps[table].get(generation)
        return row[min(domains, 3) - 1] if row else 0.0


def _freeze(mapping: dict[str, Any], scale: float = 1.0) -> MappingProxyType:
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        if key in ("source", "note"):
            continue
        out[key] = _freeze(value, scale) if isinstance(value, dict) else float(value) * scale
    return MappingProxyType(out)


def _value(raw: dict[str, Any], key: str) -> Any:
    entry = raw[key]
    return entry["value"] if isinstance(entry, dict) and "value" in entry else entry


def _per_channel(raw: dict[str, Any]) -> MappingProxyType:
    return MappingProxyType({
        table: MappingProxyType({gen: tuple(float(x) * _GBPS for x in row) for gen, row in rows.items()})
        for table, rows in raw.items()
        if table != "source"
    })


def available_versions() -> tuple[str, ...]:
    """NCCL versions with a shipped constants file ``data/nccl_<major>_<minor>.yaml``."""
    data = resources.files("fabricsim.collectives") / "data"
    names = (entry.name for entry in data.iterdir())
    return tuple(sorted(n[5:-5].replace("_", ".") for n in names if n.startswith("nccl_") and n.endswith(".yaml")))


@lru_cache(maxsize=8)
def constants(version: str = DEFAULT_VERSION) -> NcclConstants:
    """Load the constants of NCCL ``version`` (e.g. ``"2.30"``) from the shipped YAML: the file name
    is the version (``nccl_2_30.yaml``), so adding a release is adding a file. Raises
    FabricsimError naming ``nccl_version`` for a version with no file."""
    name = f"nccl_{version.replace('.', '_')}.yaml"
    path = resources.files("fabricsim.collectives") / "data" / name
    if not path.is_file():
        raise FabricsimError(
            "nccl_version", f"no constants for NCCL {version!r}", f"use one of: {', '.join(available_versions())}"
        )
    raw = load_shipped_yaml(path)
    plateau = raw["ring_plateau_latency_factor"]
    overhead = raw["net_overhead_us"]
    channels = raw["channel_count"]
    p2p = raw["p2p"]
    return NcclConstants(
        version=str(raw["version"]),
        base_latency_s=_freeze(raw["base_latency_us"], _US),
        hw_latency_s=_freeze(raw["hw_latency_us"], _US),
        net_overhead_s=_freeze({k: v for k, v in overhead.items() if k != "simple_multiplier"}, _US),
        net_overhead_simple_multiplier=float(overhead["simple_multiplier"]),
        ll_max_single_node_Bps=_freeze(raw["ll_max_bw_GBps"]["single_node"], _GBPS),
        ll_max_multi_node_Bps=_freeze(raw["ll_max_bw_GBps"]["multi_node"], _GBPS),
        nvls_efficiency=_freeze(raw["nvls_efficiency"]),
        nvls_channels=int(_value(raw, "nvls_channels")),
        nvls_chunk_bytes=tuple(int(c) for c in _value(raw, "nvls_chunk_bytes")),
        nvls_max_arity=int(_value(raw, "nvls_max_arity")),
        nvls_pipeline_stages=int(_value(raw, "nvls_pipeline_stages")),
        nvls_step_hops=int(_value(raw, "nvls_step_hops")),
        nvlink_link_Bps=_freeze(raw["nvlink_link_GBps"], _GBPS),
        protocol_bw_factor=_freeze(raw["protocol_bw_factor"]),
        per_channel_max_Bps=_per_channel(raw["per_channel_max_bw_GBps"]),
        max_search_channels=int(channels["max_search_channels"]),
        channel_duplication=int(channels["duplication"]),
        ring_plateau_factor_sm80=float(plateau["sm80_plus"]),
        ring_plateau_factor_older=float(plateau["older"]),
        collnet_arity_serialization_s=float(_value(raw, "collnet_arity_serialization_us")) * _US,
        tree_correction=MappingProxyType(
            {k: tuple(float(x) for x in v) for k, v in raw["tree_correction_factor"].items() if k != "source"}
        ),
        p2p_chunk_bytes=MappingProxyType(
            {"nvlink": int(_value(p2p, "nvl_chunk_bytes")), "pci": int(_value(p2p, "pci_chunk_bytes"))}
        ),
        p2p_min_part_divisor=int(_value(p2p, "min_part_divisor")),
        p2p_max_part_multiple=int(_value(p2p, "max_part_multiple")),
        p2p_channels_per_nvlink=int(_value(p2p, "channels_per_nvlink")),
        p2p_max_channels=int(_value(p2p, "max_channels")),
        p2p_per_channel_Bps=float(_value(p2p, "per_channel_GBps")) * _GBPS,
    )
