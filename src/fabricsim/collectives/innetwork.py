"""In-network reduction: NVLS (NVLink SHARP, in the NVSwitch) and SHARP (in InfiniBand switches),
as :class:`Candidate` values (layer L4).

NVLS all-reduce inside a domain (NCCL ``src/device/all_reduce.h``, NVLS/Simple): each GPU's r
heads reduce their slice with ``multimem.ld_reduce`` and multicast it with ``multimem.st``, so per
direction a GPU moves S(1 + 1/r) bytes; reduce-scatter and all-gather move S. NVLink runs at
NCCL's NVLS bandwidth: nominal x nvlsEfficiency x (nCh-1)/nCh (tuning.cc, reference 1.5 step 2).
The kernel pipelines chunks through three warp groups (scatter, reduce+multicast, gather); each
chunk step pays two NVLink crossings of NCCL's Simple per-hop latency. Across domains NVLS becomes
NCCL's NVLS-Tree: the heads' slices (S/r each) go over their NICs, pipelined with the NVLS part;
NCCL's rule interBw x 2 when nNodes <= 2 and its perChMaxNVLSTreeBws cap apply (reference 1.5).
"""

from __future__ import annotations

import math

from fabricsim.collectives.algorithms import AR, hw_latency
from fabricsim.collectives.candidate import Candidate, Pipeline, Shape
from fabricsim.collectives.nccl import NcclConstants
from fabricsim.collectives.ops import Algorithm, CollectiveOp, Protocol
from fabricsim.collectives.placement import Group


def nvls_bandwidth_Bps(group: Group, nccl: NcclConstants) -> float:
    """NCCL's NVLS NVLink bandwidth: nominal x nvlsEfficiency[generation] x (nCh - 1) / nCh."""
    channels = nccl.nvls_channels
    return group.scale_up_Bps * nccl.nvls_efficiency[group.generation] * (channels - 1) / channels


def nvls_pipeline(op: CollectiveOp, group: Group, nccl: NcclConstants) -> Pipeline:
    """The chunk pipeline of one NVLS collective inside a domain (see module docstring)."""
    r = group.ranks_per_domain
    traffic = 1.0 + 1.0 / r if op is AR else 1.0
    heads = nccl.nvls_channels * r
    step_s = nccl.nvls_step_hops * hw_latency(nccl, group.intra_hw, "ring", Protocol.SIMPLE)
    return Pipeline(
        chunks_bytes=tuple(float(heads * c) for c in nccl.nvls_chunk_bytes),
        stages=nccl.nvls_pipeline_stages,
        step_s=step_s,
        s_per_byte=traffic / nvls_bandwidth_Bps(group, nccl),
    )


def nvls(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """NVLS (one domain: all-reduce, reduce-scatter, all-gather) or NVLS-Tree (several domains:
    all-reduce; latency 2 log2(d) x NET NVLS-Tree). NVLS-Tree's inter-domain part sends S/r over
    each NIC when d <= 2 and 2 S/r beyond (NCCL: interBw x 2 when nNodes <= 2), and its bus
    bandwidth is at most nvls_channels x perChMaxNVLSTreeBw (algbw = busbw p / 2(p-1))."""
    d, p = group.domains, group.ranks
    latency, inter_s_per_byte = 0.0, 0.0
    if d > 1:
        latency = 2 * int(math.log2(d)) * hw_latency(nccl, "net", "nvls_tree", Protocol.SIMPLE)
        inter_s_per_byte = (1.0 if d <= 2 else 2.0) / group.ranks_per_domain / group.scale_out_Bps
        cap = nccl.per_channel_cap_Bps("nvls_tree", group.generation, d)
        if cap > 0.0:
            inter_s_per_byte = max(inter_s_per_byte, 2.0 * (p - 1) / p / (nccl.nvls_channels * cap))
    pipeline = nvls_pipeline(op, group, nccl)
    return (Candidate(Algorithm.NVLS, Protocol.SIMPLE, Shape.PIPELINE, latency, inter_s_per_byte, pipeline=pipeline),)


def sharp(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """SHARP through NCCL's CollNet Direct: reduce-scatter inside the domain (NVLS when the NVSwitch
    has it, else point-to-point), in-switch all-reduce of each GPU's S/r over its NIC (a GPU sends and
    receives S/r), all-gather inside the domain; the parts are pipelined (time = the slowest part).
    Latency: 2(min(1, r-1) intra + 0.4 us (r-1)) + NET CollNet latency (tuning.cc, reference 1.6)."""
    r, d = group.ranks_per_domain, group.domains
    halves = 2 if op is AR else 1
    if r == 1:
        intra_s_per_byte = 0.0
    elif group.nvls:
        intra_s_per_byte = (1.0 + 1.0 / r if op is AR else 1.0) / nvls_bandwidth_Bps(group, nccl)
    else:
        intra_s_per_byte = halves * (r - 1) / r / group.scale_up_p2p_Bps
    inter_volume = 1.0 if op is AR else (d - 1) / d
    out_Bps = group.scale_out_Bps
    if group.generation in ("hopper", "blackwell") and op is AR:
        out_Bps *= nccl.protocol_bw_factor["collnet_hopper"]
    inter_s_per_byte = inter_volume / r / out_Bps
    intra = hw_latency(nccl, group.intra_hw, "collnet_direct", Protocol.SIMPLE)
    latency = 2 * (min(1, r - 1) * intra + (r - 1) * nccl.collnet_arity_serialization_s)
    latency += hw_latency(nccl, "net", "collnet_direct", Protocol.SIMPLE)
    s_per_byte = max(intra_s_per_byte, inter_s_per_byte)
    return (Candidate(Algorithm.SHARP, Protocol.SIMPLE, Shape.LINEAR, latency, s_per_byte),)

