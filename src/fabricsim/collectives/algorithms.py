"""Point-to-point collective algorithms: ring, double binary tree, halving-doubling, hierarchical
and direct (pairwise) — closed-form costs as :class:`Candidate` values (layer L4).

Latency terms follow NCCL 2.30's tuning model (``src/graph/tuning.cc`` ncclTopoTuneModel; reference
1.6), bandwidth terms the alpha-beta costs of Thakur, Rabenseifner & Gropp (IJHPCA 2005) with the
bandwidth of the slowest tier the group crosses, derated per protocol and capped per channel
(perChMax*Bws x nChannels, ``Group.channels``) as NCCL does (reference 1.4, 1.5).
Sizes are nccl-tests' S (reference 1.11). p = ranks, r = ranks per scale-up domain, d = domains.
"""

from __future__ import annotations

import math

from fabricsim.collectives.candidate import Candidate, Shape
from fabricsim.collectives.nccl import NcclConstants
from fabricsim.collectives.ops import Algorithm, CollectiveOp, Protocol
from fabricsim.collectives.p2p import channel_rule
from fabricsim.collectives.placement import Group

AR, AG, RS = CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER
BCAST, REDUCE = CollectiveOp.BROADCAST, CollectiveOp.REDUCE
A2A, P2P = CollectiveOp.ALL_TO_ALL, CollectiveOp.SEND_RECV
LL, LL128, SIMPLE = Protocol.LL, Protocol.LL128, Protocol.SIMPLE


def protocols(group: Group, with_ll128: bool = True) -> tuple[Protocol, ...]:
    """NCCL enables LL128 only over NVLink paths (reference 1.7, enable rules)."""
    if with_ll128 and group.intra_hw == "nvlink":
        return (LL, LL128, SIMPLE)
    return (LL, SIMPLE)


def ll_cap_Bps(group: Group, nccl: NcclConstants) -> float:
    """llMaxBws: by GPU generation inside one domain, by CPU vendor and node count across domains.
    NCCL's table has no row for a non-NVIDIA generation (AMD CDNA, Intel Gaudi): no cap there."""
    if group.domains == 1:
        return nccl.ll_max_single_node_Bps.get(group.generation, math.inf)
    row = nccl.ll_max_multi_node_Bps[group.cpu_vendor]
    return row["two_nodes"] if group.domains == 2 else row["more_nodes"]


def channel_cap_Bps(group: Group, nccl: NcclConstants, table: str) -> float:
    """nChannels x NCCL's per-channel cap ``table`` for the group's generation and domain count
    (reference 1.4); infinite where NCCL gives no cap."""
    cap = nccl.per_channel_cap_Bps(table, group.generation, group.domains)
    return group.channels * cap if cap > 0.0 else math.inf


def ring_bandwidth_Bps(group: Group) -> float:
    """Per-rank bandwidth of a ring: point-to-point NVLink inside a domain; across domains the
    domain's r rings leave through r NICs, so min(NVLink, r x NIC share)."""
    if group.domains == 1:
        return group.scale_up_p2p_Bps
    return min(group.scale_up_p2p_Bps, group.ranks_per_domain * group.scale_out_Bps)


def hw_latency(nccl: NcclConstants, hw: str, algo: str, protocol: Protocol) -> float:
    return nccl.hw_latency_s[hw][algo][protocol.value]


def _ring_hops(group: Group, nccl: NcclConstants, protocol: Protocol) -> tuple[float, float]:
    """(intra-domain, inter-domain) latency of one ring step (reference 1.6)."""
    intra = hw_latency(nccl, group.intra_hw, "ring", protocol)
    inter = hw_latency(nccl, "net", "ring" if group.ranks_per_domain > 1 else "tree", protocol)
    if group.domains > 1:
        overhead = nccl.net_overhead_s[group.cpu_vendor]
        intra = max(intra, overhead * (nccl.net_overhead_simple_multiplier if protocol is SIMPLE else 1.0))
    return intra, inter


def ring(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """NCCL ring: 2(p-1) steps moving 2(p-1)/p S for all-reduce, p-1 steps and (p-1)/p S for
    all-gather/reduce-scatter, a pipelined chain moving S for broadcast/reduce. LL128 is capped
    at nChannels x perChMaxRingLL128Bw; the Simple all-reduce plateau (latency x 1.4) starts at
    S / (nChannels x p) >= 64 B (tuning.cc, reference 1.5 and 1.7)."""
    p, d = group.ranks, group.domains
    steps, inter_steps, volume = {
        AR: (2 * (p - 1), 2 * (d - 1), 2.0 * (p - 1) / p),
        AG: (p - 1, d - 1, (p - 1) / p),
        RS: (p - 1, d - 1, (p - 1) / p),
        BCAST: (1, min(1, d - 1), 1.0),
        REDUCE: (1, min(1, d - 1), 1.0),
    }[op]
    out = []
    for protocol in protocols(group):
        intra, inter = _ring_hops(group, nccl, protocol)
        latency = nccl.base_latency_s["ring"][protocol.value] + (steps - inter_steps) * intra + inter_steps * inter
        bandwidth = ring_bandwidth_Bps(group)
        if protocol is LL:
            bandwidth = min(ll_cap_Bps(group, nccl), nccl.protocol_bw_factor["ring_ll"] * bandwidth)
        elif protocol is LL128:
            ll128_Bps = bandwidth * nccl.protocol_bw_factor["ring_ll128"]
            bandwidth = min(ll128_Bps, channel_cap_Bps(group, nccl, "ring_ll128"))
        plateau = op is AR and protocol is SIMPLE and d > 1
        factor = nccl.ring_plateau_factor_sm80 if group.generation != "volta" else nccl.ring_plateau_factor_older
        out.append(
            Candidate(
                Algorithm.RING, protocol, Shape.RING_PLATEAU if plateau else Shape.LINEAR, latency,
                volume / bandwidth, plateau_bytes=64.0 * p * group.channels, plateau_factor=factor if plateau else 1.0,
            )
        )
    return tuple(out)


def tree(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """NCCL double binary tree all-reduce: a chain of r ranks per domain, a tree over d domains;
    latency 2((r-1) intra + log2(d) inter), algbw = busbw / 2 with NCCL's deratings and per-channel
    caps, in NCCL's order: min(0.92 busbw, nCh x perChMaxTreeBw), then LL (/3.8, llMaxBw) or LL128
    (x 7/9 or 120/128, nCh x perChMaxTreeLL128Bw), then x 0.85 for a real tree (reference 1.5)."""
    r, d = group.ranks_per_domain, group.domains
    factors = nccl.protocol_bw_factor
    out = []
    for protocol in protocols(group):
        intra = hw_latency(nccl, group.intra_hw, "tree", protocol)
        inter = hw_latency(nccl, "net", "tree", protocol)
        latency = nccl.base_latency_s["tree"][protocol.value] + 2 * ((r - 1) * intra + int(math.log2(d)) * inter)
        bandwidth = min(ring_bandwidth_Bps(group) * factors["tree_allreduce"], channel_cap_Bps(group, nccl, "tree"))
        if protocol is LL:
            bandwidth = min(bandwidth / factors["tree_ll_divisor"], ll_cap_Bps(group, nccl))
        elif protocol is LL128:
            bandwidth *= factors["tree_ll128_single_node"] if d == 1 else factors["tree_ll128_multi_node"]
            bandwidth = min(bandwidth, channel_cap_Bps(group, nccl, "tree_ll128"))
        if d > 1:
            bandwidth *= factors["tree_pattern"]
        out.append(Candidate(Algorithm.TREE, protocol, Shape.TREE, latency, 2.0 / bandwidth, nccl=nccl))
    return tuple(out)


def _split_levels(group: Group) -> tuple[int, int, bool]:
    """(inter-domain levels, intra-domain levels, power of two) of recursive halving/doubling."""
    p, r = group.ranks, group.ranks_per_domain
    levels = int(math.log2(p))
    intra = min(levels, int(math.log2(r))) if r > 1 else 0
    return levels - intra, intra, (1 << levels) == p


def halving_doubling(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """Recursive halving (reduce-scatter) and doubling (all-gather), partner distance p/2 first, so
    inter-domain levels come first and move S/2 + S/4 + ...; all-reduce (Rabenseifner), broadcast
    (scatter + all-gather) and reduce (reduce-scatter + gather) do both halves. A non-power-of-two
    p adds one full exchange each way (Thakur et al. 2005, sec. 4)."""
    inter_levels, intra_levels, power_of_two = _split_levels(group)
    inter_bytes = 1.0 - 0.5**inter_levels
    intra_bytes = 0.5**inter_levels * (1.0 - 0.5**intra_levels)
    intra_lat, inter_lat = _ring_hops(group, nccl, SIMPLE)
    out_Bps = group.scale_out_Bps if group.domains > 1 else group.scale_up_p2p_Bps
    s_per_byte = inter_bytes / out_Bps + intra_bytes / group.scale_up_p2p_Bps
    latency = inter_levels * inter_lat + intra_levels * intra_lat
    if not power_of_two:
        s_per_byte += 1.0 / min(out_Bps, group.scale_up_p2p_Bps)
        latency += inter_lat if group.domains > 1 else intra_lat
    halves = 1 if op in (AG, RS) else 2
    latency = nccl.base_latency_s["ring"][SIMPLE.value] + halves * latency
    return (Candidate(Algorithm.HALVING_DOUBLING, SIMPLE, Shape.LINEAR, latency, halves * s_per_byte),)


def hierarchical(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """Intra-domain reduce-scatter, inter-domain ring on S/r over each GPU's own NIC (rail-aligned),
    intra-domain all-gather, one after the other (reference 2, last paragraph)."""
    r, d = group.ranks_per_domain, group.domains
    halves = 2 if op is AR else 1
    intra_lat, inter_lat = _ring_hops(group, nccl, SIMPLE)
    latency = nccl.base_latency_s["ring"][SIMPLE.value] + halves * ((r - 1) * intra_lat + (d - 1) * inter_lat)
    s_per_byte = halves * ((r - 1) / r / group.scale_up_p2p_Bps + (d - 1) / d / r / group.scale_out_Bps)
    return (Candidate(Algorithm.HIERARCHICAL, SIMPLE, Shape.LINEAR, latency, s_per_byte),)


def _direct_bytes(op: CollectiveOp, group: Group) -> tuple[float, float]:
    """(bytes per byte of S over scale-up, over scale-out) that the busiest rank sends."""
    p, r = group.ranks, group.ranks_per_domain
    if op is P2P:
        return (0.0, 1.0) if group.domains > 1 else (1.0, 0.0)
    if op in (BCAST, REDUCE):
        return float(r - 1), float(p - r)
    halves = 2.0 if op is AR else 1.0
    return halves * (r - 1) / p, halves * (p - r) / p


def direct(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """Every rank sends straight to each peer (NCCL grouped send/recv; pairwise exchange, Thakur
    2005): NVLink and NIC transfers overlap, so time is the larger of the two. Latency: one hop per
    tier used plus NCCL's 0.4 us per-peer serialization for each extra peer. A send/recv inside a
    domain also moves at most nChannels x NCCL's per-channel rate, nChannels by NCCL's rule for the
    size and the communicator (:mod:`fabricsim.collectives.p2p`; LL carries half its bytes as
    flags, so an LL channel moves half as much data); across domains the NIC stays the limit."""
    up_bytes, out_bytes = _direct_bytes(op, group)
    peers = 1 if op is P2P else group.ranks - 1
    rule = channel_rule(group, nccl) if op is P2P else None
    out = []
    for protocol in protocols(group, with_ll128=False):
        intra, inter = _ring_hops(group, nccl, protocol)
        latency = nccl.base_latency_s["ring"][protocol.value] + (intra if up_bytes else 0.0)
        latency += (inter if out_bytes else 0.0) + (peers - 1) * nccl.collnet_arity_serialization_s
        up_Bps, out_Bps = group.scale_up_p2p_Bps, group.scale_out_Bps
        if protocol is LL:
            cap = ll_cap_Bps(group, nccl)
            up_Bps, out_Bps = min(cap, 0.5 * up_Bps), min(cap, 0.5 * out_Bps)
        s_per_byte = max(up_bytes / up_Bps, out_bytes / out_Bps)
        if rule is None:
            out.append(Candidate(Algorithm.DIRECT, protocol, Shape.LINEAR, latency, s_per_byte))
            continue
        channel_Bps = nccl.p2p_per_channel_Bps * (0.5 if protocol is LL else 1.0)
        out.append(Candidate(Algorithm.DIRECT, protocol, Shape.CHANNELS, latency, s_per_byte,
                             channels=rule, channel_Bps=channel_Bps))
    return tuple(out)
