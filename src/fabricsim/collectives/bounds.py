"""Alpha-beta lower bounds on collective time (layer L4).

Bandwidth bounds only (latency >= 0), with nominal bandwidths, so every algorithm of the model must
take at least this long. A rank drives its scale-up link and, in a multi-domain group, its NIC
share at the same time, so the per-rank bound uses B = scale-up (+ NIC share); across domains the
cut between a domain and the rest adds a bound over the domain's r NIC shares.
Sources: Patarasuk & Yuan, JPDC 69(2) 2009 (all-reduce 2(p-1)/p S/B); Chan et al., CCPE 19(13)
2007 (lower-bound table); nccl-tests doc/PERFORMANCE.md (in-network reduction: S/B).
"""

from __future__ import annotations

from fabricsim.collectives.ops import CollectiveOp
from fabricsim.collectives.placement import Group


def rank_bandwidth_Bps(group: Group) -> float:
    """Nominal per-direction bandwidth one rank can drive: NVLink, plus its NIC share across domains."""
    if group.domains == 1:
        return group.scale_up_Bps
    return group.scale_up_Bps + group.scale_out_Bps


def _volumes(op: CollectiveOp, group: Group, in_network: bool) -> tuple[float, float]:
    """(bytes per byte of S a rank must move, bytes per byte of S that must leave a domain)."""
    p, d, r = group.ranks, group.domains, group.ranks_per_domain
    if op is CollectiveOp.ALL_REDUCE:
        if in_network:
            return 1.0, (d - 1) / d
        return 2.0 * (p - 1) / p, 2.0 * (d - 1) / d
    if op in (CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER):
        return (p - 1) / p, (d - 1) / d
    if op is CollectiveOp.ALL_TO_ALL:
        return (p - 1) / p, r * (p - r) / p
    if op is CollectiveOp.SEND_RECV:
        return 1.0, 1.0 / r if d > 1 else 0.0
    return 1.0, 0.0


def lower_bound_s(op: CollectiveOp, size_bytes: float, group: Group, in_network: bool) -> float:
    """Seconds no algorithm can beat: max(volume x S / B_rank, cut volume x S / (r x NIC share)).

    all-reduce 2(p-1)/p S/B (S/B with in-network reduction); all-gather, reduce-scatter,
    all-to-all (p-1)/p S/B; broadcast, reduce, send-recv S/B. A single rank: 0.
    """
    if group.ranks == 1:
        return 0.0
    per_rank, per_domain = _volumes(op, group, in_network)
    bound = per_rank * size_bytes / rank_bandwidth_Bps(group)
    if group.domains > 1 and per_domain > 0.0:
        cut_Bps = group.ranks_per_domain * group.scale_out_Bps
        bound = max(bound, per_domain * size_bytes / cut_Bps)
    return bound
