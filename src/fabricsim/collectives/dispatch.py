"""MoE token dispatch/combine with DeepEP-style kernels on a group's real tiers (layer L4).

DeepEP's normal (training) kernels (deepseek-ai/DeepEP; DeepSeek-V3 report, arXiv 2412.19437 sec.
3.2.2) send each token **once per destination scale-up domain** over RDMA, to the GPU with the same
in-domain index there, which forwards it over NVLink to the GPUs holding its experts; RDMA and
NVLink transfers run at once. With ``D`` domains of ``r`` ranks in the expert-parallel group and a
token routed to ``k`` experts spread uniformly over the group, one rank's dispatch moves::

    RDMA   = n · b · (D - 1) · (1 - (1 - 1/D)^k)     (distinct remote domains a token visits)
    NVLink = n · b · k · (1 - 1/r)                   (every (token, expert) pair not on the proxy GPU)
    time   = max(RDMA / scale-out B/s, NVLink / NVLink p2p B/s) + latency

for ``n`` tokens of ``b`` bytes; combine moves the same bytes back. A plain all-to-all (NCCL,
Megatron-Core's default dispatcher) instead sends every pair, ``k·(D-1)/D`` copies per token over
the network: 7 vs 4.6 for k = 8 over 8 domains. Bandwidths are the group's nominal per-GPU scale-out
share and NCCL's effective NVLink p2p figure (:func:`fabricsim.collectives.placement.place_group`);
DeepEP's published H800 figures reach them (153/158 GB/s dispatch/combine intranode against the
164.8 GB/s used here; 43-58 GB/s "logical" internode bandwidth against 50 GB/s IB;
reference/kernel-efficiency.md M10-M11). Node-limited routing (DeepSeek-V3 sends a token to at
most 4 nodes) is not modelled: the model config does not carry it, so the RDMA volume is an upper
bound for such models.
"""

from __future__ import annotations

from fabricsim.collectives.placement import Group


def dispatch_bytes(group: Group, tokens: float, experts_per_token: int, token_bytes: float) -> tuple[float, float]:
    """(RDMA, NVLink) bytes one rank sends in one DeepEP dispatch (module docstring)."""
    domains, per_domain = group.domains, max(1, group.ranks_per_domain)
    k = float(experts_per_token)
    rdma = 0.0
    if domains > 1:
        rdma = tokens * token_bytes * (domains - 1) * (1.0 - (1.0 - 1.0 / domains) ** k)
    nvlink = tokens * token_bytes * k * (1.0 - 1.0 / per_domain)
    return rdma, nvlink


def deepep_dispatch_s(
    group: Group, tokens: float, experts_per_token: int, token_bytes: float, latency_s: float
) -> float:
    """Seconds of one DeepEP dispatch (or combine) of ``tokens`` per rank over ``group``."""
    if group.ranks <= 1 or tokens <= 0:
        return 0.0
    rdma, nvlink = dispatch_bytes(group, tokens, experts_per_token, token_bytes)
    rdma_s = rdma / group.scale_out_Bps if rdma else 0.0
    return max(rdma_s, nvlink / group.scale_up_p2p_Bps) + latency_s
