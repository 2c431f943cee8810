"""Where a group of ranks sits on a system's fabric tiers (layer L4).

:func:`place_group` turns (system, ranks, stride) into a :class:`Group`: how many scale-up domains
the group spans, how many ranks share a domain, and the per-GPU, per-direction bandwidth of each
tier. GPUs are numbered node-major (DESIGN.md): GPU g is on node g // gpus_per_node and in scale-up
domain g // domain_gpus; the group takes GPUs 0, stride, 2*stride, ... Tensor-parallel groups use
stride 1, data-parallel groups stride tp*pp*cp. Results are cached: placing is O(1).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from fabricsim.collectives.nccl import constants
from fabricsim.errors import FabricsimError
from fabricsim.specs import CollectiveFit, LinkKind, SystemSpec


@dataclass(frozen=True, slots=True)
class Group:
    """A communicator's footprint. Bandwidths are bytes/s per GPU per direction.

    ``scale_up_Bps`` is the nominal NVLink (or PCIe) bandwidth; ``scale_up_p2p_Bps`` what
    point-to-point copies reach (NCCL's per-link effective NVLink figure, topo.h, over the nominal
    per-link rate); ``scale_out_Bps`` each GPU's share of its node's NICs, divided by the fabric's
    oversubscription when the group spans more nodes than one leaf switch reaches. ``channels`` is
    NCCL's ring/tree channel count for the group (:func:`nccl_channels`).

    ``mesh``: the scale-up domain is a full mesh of point-to-point links (no switch), so a rank
    reaches its ``ranks_per_domain - 1`` peers each over its own links and ``scale_up_Bps`` is only
    those links' sum, not the GPU's whole scale-up bandwidth (:func:`mesh_rank_Bps`).

    ``torus``: the scale-up domain is a torus (no switch); ``torus_rings`` the rings the group's
    ranks of one domain form along its dimensions, ``(ranks on the ring, bytes/s per direction
    around it)`` (:func:`torus_rings`), empty when the group does not fill whole dimensions.
    ``scale_up_Bps`` is then the sum of those rings' bandwidths (one link when empty).
    """

    ranks: int
    ranks_per_domain: int
    domains: int
    scale_up_Bps: float
    scale_up_p2p_Bps: float
    scale_out_Bps: float
    intra_hw: str
    nvls: bool
    sharp_capable: bool
    sharp_enabled: bool
    generation: str
    cpu_vendor: str
    hbm_bandwidth_Bps: float
    crosses_spine: bool
    channels: int
    measured: tuple[CollectiveFit, ...] = ()  # the system's nccl-tests fits for exactly this group
    mesh: bool = False
    torus: bool = False
    torus_rings: tuple[tuple[int, float], ...] = ()

    @property
    def multi_domain(self) -> bool:
        return self.domains > 1

    @property
    def bottleneck_Bps(self) -> float:
        """Nominal per-direction bandwidth of the slowest tier the group crosses, as one rank sees
        it when every rank of its domain drives its own NIC: the scale-up bandwidth inside one
        domain; across domains min(scale-up, ranks_per_domain x NIC share), because a ring or a
        hierarchical schedule spreads the domain's inter-domain traffic over those NICs."""
        if self.domains == 1:
            return self.scale_up_Bps
        return min(self.scale_up_Bps, self.ranks_per_domain * self.scale_out_Bps)


@dataclass(frozen=True, slots=True)
class _Fabric:
    """The hashable part of a SystemSpec that placement needs (SystemSpec holds dicts)."""

    gpus_per_node: int
    domain_gpus: int
    max_gpus: int
    scale_up_Bps: float
    scale_up_link_Bps: float
    scale_up_kind: str
    nvls_switch: bool
    nic_share_Bps: float
    nics_per_node: int
    oversubscription: float
    leaf_nodes: int
    sharp_capable: bool
    sharp_enabled: bool
    generation: str
    cpu_vendor: str
    hbm_bandwidth_Bps: float
    fits: tuple[CollectiveFit, ...] = ()
    mesh_peer_Bps: float = 0.0  # a full-mesh domain's bandwidth per GPU pair; 0 behind a switch
    torus_dims: tuple[int, ...] = ()  # a torus domain's shape, x fastest; () otherwise
    torus_link_Bps: tuple[float, ...] = ()  # per torus dimension, one link's bytes/s per direction


def _fabric(system: SystemSpec) -> _Fabric:
    up, out = system.scale_up, system.scale_out
    return _Fabric(
        gpus_per_node=system.gpus_per_node,
        domain_gpus=up.domain_gpus,
        max_gpus=system.max_gpus,
        scale_up_Bps=up.bandwidth_Bps,
        scale_up_link_Bps=up.link.bandwidth_Bps,
        scale_up_kind=up.link.kind.value,
        nvls_switch=up.in_network_reduction,
        nic_share_Bps=out.nic.bandwidth_Bps * out.nics_per_node / system.gpus_per_node,
        nics_per_node=out.nics_per_node,
        oversubscription=out.oversubscription,
        leaf_nodes=max(1, out.switch.radix // 2),
        sharp_capable=out.switch.in_network_reduction,
        sharp_enabled=out.in_network_reduction,
        generation=system.device.generation.value,
        cpu_vendor=system.cpu_vendor.value,
        hbm_bandwidth_Bps=system.device.hbm_bandwidth_Bps,
        fits=system.collective_fits,
        mesh_peer_Bps=up.peer_Bps if up.full_mesh else 0.0,
        torus_dims=tuple(up.dims) if up.dims else (),
        torus_link_Bps=up.torus_link_Bps,
    )


def torus_rings(
    dims: tuple[int, ...], ranks: int, stride: int, link_Bps: tuple[float, ...]
) -> tuple[tuple[int, float], ...]:
    """The rings ``ranks`` GPUs at ``stride`` form inside one torus of shape ``dims`` (x fastest,
    ``link_Bps[d]`` one link of dimension d per direction),
    as ``(ranks on the ring, bytes/s per direction around it)``; () when they do not map onto
    dimensions (a stride or size that splits a dimension other than the group's last one).

    The stride skips whole leading dimensions (data-parallel groups: stride tp), the ranks then fill
    the next dimensions in order (a tensor-parallel group of 4 on a 4x4x4 cube: x; of 16: x and y).
    A whole dimension of more than 2 has its wraparound: a bidirectional ring, 2 links' worth per
    direction. A dimension of 2, or the group's last dimension taken only in part (an open line of
    chips), carries a ring at one link per direction (the ring runs out along the line and back).
    """
    index, skip = 0, stride
    while skip > 1:
        if index >= len(dims) or skip % dims[index]:
            return ()
        skip //= dims[index]
        index += 1
    rings: list[tuple[int, float]] = []
    left = ranks
    while left > 1 and index < len(dims):
        size = dims[index]
        if left % size == 0:
            rings.append((size, link_Bps[index] * (2.0 if size > 2 else 1.0)))
            left //= size
        elif left < size:
            rings.append((left, link_Bps[index]))
            left = 1
        else:
            return ()
        index += 1
    return tuple((n, b) for n, b in rings if n > 1) if left == 1 else ()


def mesh_rank_Bps(peer_Bps: float, ranks_per_domain: int, domain_Bps: float) -> float:
    """Scale-up bytes/s per direction one rank of a full-mesh domain can drive to its group: one
    pair's links per peer in the group, ``ranks_per_domain - 1`` of them (at least one, the pair a
    lone rank would use), never more than the GPU's ``domain_Bps``."""
    return min(domain_Bps, max(1, ranks_per_domain - 1) * peer_Bps)


def place_group(system: SystemSpec, ranks: int, stride: int = 1) -> Group:
    """Place ``ranks`` GPUs taking every ``stride``-th GPU of ``system`` (see module docstring).

    Raises FabricsimError when ranks or stride is not a positive integer or the group needs more
    GPUs than the system has. Cached on the system's fabric parameters, ranks and stride.
    """
    for field, value in (("gpus", ranks), ("stride", stride)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise FabricsimError(field, f"must be a positive integer, got {value!r}")
    return _place(_fabric(system), ranks, stride)


def nccl_channels(fabric: _Fabric, ranks_per_domain: int, domains: int) -> int:
    """NCCL's ring/tree nChannels, as the YAML's ``channel_count`` derives it (a stand-in for
    NCCL's topology search, src/graph/search.cc): one channel per NVLink inside a domain (one for a
    PCIe domain); across domains at most one per NIC serving the group's ranks of a domain; capped
    at ``max_search_channels``, then doubled as ncclTopoPostset duplicates channels. E.g. 8xA100
    (12 NVLinks) 24, 8xH100 32, 8 nodes of 8 GPUs with 8 NICs 16."""
    nccl = constants()
    rings = 1
    if fabric.scale_up_kind == LinkKind.NVLINK.value:
        rings = max(1, round(fabric.scale_up_Bps / fabric.scale_up_link_Bps))
    if domains > 1:
        nics = -(-ranks_per_domain * fabric.nics_per_node // fabric.gpus_per_node)
        rings = min(rings, max(1, nics))
    return nccl.channel_duplication * min(rings, nccl.max_search_channels)


@lru_cache(maxsize=4096)
def _place(fabric: _Fabric, ranks: int, stride: int) -> Group:
    last_gpu = (ranks - 1) * stride
    if last_gpu >= fabric.max_gpus:
        raise FabricsimError(
            "gpus", f"{ranks} ranks at stride {stride} need GPU {last_gpu}, beyond {fabric.max_gpus}", "use fewer"
        )
    size = fabric.domain_gpus
    domains = ranks if stride >= size else last_gpu // size + 1
    per_domain = -(-ranks // domains)
    nodes_spanned = last_gpu // fabric.gpus_per_node + 1
    crosses_spine = domains > 1 and nodes_spanned > fabric.leaf_nodes
    nic = fabric.nic_share_Bps / (fabric.oversubscription if crosses_spine else 1.0)
    nccl = constants()
    scale_up_Bps = fabric.scale_up_Bps
    if fabric.mesh_peer_Bps:
        scale_up_Bps = mesh_rank_Bps(fabric.mesh_peer_Bps, per_domain, fabric.scale_up_Bps)
    rings: tuple[tuple[int, float], ...] = ()
    if fabric.torus_dims:
        rings = torus_rings(fabric.torus_dims, per_domain, stride, fabric.torus_link_Bps)
        scale_up_Bps = min(fabric.scale_up_Bps, sum(b for _, b in rings) or min(fabric.torus_link_Bps))
    p2p_efficiency = 1.0
    if fabric.scale_up_kind == LinkKind.NVLINK.value and fabric.generation in nccl.nvlink_link_Bps:
        p2p_efficiency = min(1.0, nccl.nvlink_link_Bps[fabric.generation] / fabric.scale_up_link_Bps)
    return Group(
        ranks=ranks,
        ranks_per_domain=per_domain,
        domains=domains,
        scale_up_Bps=scale_up_Bps,
        scale_up_p2p_Bps=scale_up_Bps * p2p_efficiency,
        scale_out_Bps=nic,
        intra_hw="nvlink" if fabric.scale_up_kind == LinkKind.NVLINK.value else "pci",
        nvls=fabric.nvls_switch and nccl.nvls_efficiency.get(fabric.generation, 0.0) > 0.0,
        sharp_capable=fabric.sharp_capable,
        sharp_enabled=fabric.sharp_enabled,
        generation=fabric.generation,
        cpu_vendor=fabric.cpu_vendor,
        hbm_bandwidth_Bps=fabric.hbm_bandwidth_Bps,
        crosses_spine=crosses_spine,
        channels=nccl_channels(fabric, per_domain, domains),
        measured=tuple(f for f in fabric.fits if f.ranks == ranks and f.nodes == nodes_spanned),
        mesh=fabric.mesh_peer_Bps > 0.0,
        torus=bool(fabric.torus_dims),
        torus_rings=rings,
    )
