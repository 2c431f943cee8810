"""Collectives on a full-mesh scale-up domain (no switch): direct exchanges over each GPU pair's own
links, as RCCL runs them on an 8-GPU AMD Instinct node (layer L4).

On a full mesh of r ranks every rank has r - 1 peers, each behind its own point-to-point links of
``b = Group.scale_up_Bps / (r - 1)`` bytes/s per direction (:func:`~fabricsim.collectives.placement.mesh_rank_Bps`).

* all-to-all: every rank sends S/r to each peer over that peer's links, all peers at once (RCCL's
  ``ncclAllToAll`` is one grouped send/recv per peer, ``src/collectives.cc``; its ring-pair
  "pivot" variant is opt-in, ``RCCL_ALL_TO_ALL_PIVOT_ENABLE`` default 0): time = alpha + (S/r)/b.
* reduce-scatter / all-gather: each rank sends its S/r block for (from) each peer over that peer's
  links: the same traffic as an all-to-all of S, time = alpha + (S/r) / b.
* all-reduce: a direct reduce-scatter then a direct all-gather, the "two-shot" all-pairs
  all-reduce of MSCCL++ that RCCL runs inside one xGMI node (``RCCL_MSCCLPP_ENABLE``, messages up
  to ``RCCL_MSCCLPP_THRESHOLD``; ROCm RCCL docs 6.3-7.0 "RCCL usage tips: MSCCL/MSCCL++"; later
  RCCL replaces it with a symmetric-memory path for all-reduce, all-gather and reduce-scatter
  among peer-to-peer (xGMI) ranks, RCCL docs 7.14 "Symmetric memory"): each rank moves
  2(r - 1)/r S over its r - 1 pair links in parallel, time = 2 alpha + 2 (S/r) / b.

Bandwidths are nominal (no protocol derating): the mesh moves exactly the alpha-beta lower bound's
bytes over every link of the group, so these forms meet :mod:`fabricsim.collectives.bounds` with
equality in the bandwidth term. alpha = NCCL's Simple base latency plus one hop of the scale-up
tier (NCCL 2.30.7 ``tuning.cc``, the same constants the ring uses; RCCL is a fork of NCCL).
Scope: inside one scale-up domain; across domains the other algorithms run.
"""

from __future__ import annotations

from fabricsim.collectives.algorithms import hw_latency
from fabricsim.collectives.candidate import Candidate, Shape
from fabricsim.collectives.nccl import NcclConstants
from fabricsim.collectives.ops import SWITCHLESS_OPS, Algorithm, CollectiveOp, Protocol
from fabricsim.collectives.placement import Group


def unavailable_reason(op: CollectiveOp, group: Group) -> str | None:
    """Why the mesh algorithm cannot run ``op`` on ``group``, or None when it can."""
    if op not in SWITCHLESS_OPS:
        return "mesh implements all-reduce, all-gather, reduce-scatter and all-to-all only"
    if not group.mesh:
        return "the scale-up domain is not a full mesh (it has a switch)"
    if group.domains > 1:
        return "the group crosses the scale-out network; mesh runs inside one scale-up domain"
    return None


def mesh(op: CollectiveOp, group: Group, nccl: NcclConstants) -> tuple[Candidate, ...]:
    """The direct mesh form of ``op`` (module docstring) as one Simple-protocol candidate:
    phases x alpha + phases x (S/r) / b, b the per-peer bandwidth."""
    r = group.ranks
    phases = 2 if op is CollectiveOp.ALL_REDUCE else 1
    peer_Bps = group.scale_up_Bps / (r - 1)
    alpha_s = nccl.base_latency_s["ring"][Protocol.SIMPLE.value] + hw_latency(
        nccl, group.intra_hw, "ring", Protocol.SIMPLE
    )
    s_per_byte = phases / (r * peer_Bps)
    return (Candidate(Algorithm.MESH, Protocol.SIMPLE, Shape.LINEAR, phases * alpha_s, s_per_byte),)
