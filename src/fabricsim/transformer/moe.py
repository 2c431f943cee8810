"""Routing arithmetic of an MoE layer on one GPU under parallel folding (layer L4).

Megatron-Core's MoE parallel folding (Liu et al. 2025, "MoE Parallel Folding", arXiv 2504.14960;
Megatron-Core MoE README) runs attention on tp x cp x dp ranks and the experts on etp x ep x edp
ranks of the same stage (etp·ep·edp = tp·cp·dp). Per micro-batch the tp·cp·dp ranks hold
``mb·s·dp`` tokens; each picks k experts, so ``mb·s·dp·k`` (token, expert) pairs spread over E
experts; a GPU holds E/ep experts, each replicated over edp groups that split its tokens, and each
expert's FFN is split over etp GPUs that all see the expert's tokens. Per GPU that is::

    pairs = mb·s·dp·k / (ep·edp) = tokens·k·etp/tp          (tokens = mb·s/cp, balanced routing)

so with etp = tp (classic EP inside DP) every GPU runs ``tokens·k`` pairs on FFN shards of
``f/tp``, and with etp = 1 ``tokens·k/tp`` pairs on whole experts: the same FLOPs, fatter GEMMs
(Megatron-Core's advice: "prefer EP over TP for the expert layer"). A capacity factor c with
padding to capacity (``--moe-expert-capacity-factor c --moe-pad-expert-input-to-capacity``) makes
every expert process c x its mean load. Balanced routing is assumed (dropless runs after the router
has settled; Megatron-Core's README notes imbalance in the first few hundred steps).
Pure functions; the grouped GEMM times come from :mod:`fabricsim.transformer.compute`.
"""

from __future__ import annotations

from typing import NamedTuple


class ExpertShard(NamedTuple):
    """What one GPU computes in the routed experts of one MoE layer for one micro-batch."""

    local_experts: float  # experts held (E/ep): the groups of the grouped GEMM
    tokens_per_expert: float  # rows of each group's GEMMs
    ffn_shard: float  # expert FFN width on this GPU (f/etp)

    @property
    def pairs(self) -> float:
        """(token, expert) pairs this GPU computes."""
        return self.local_experts * self.tokens_per_expert


def expert_shard(
    tokens: float,
    experts: int,
    experts_per_token: int,
    expert_ffn: int,
    parallel: tuple[int, int, int],
    capacity_factor: float = 1.0,
) -> ExpertShard:
    """The routed-expert work of one GPU (module docstring); ``tokens`` = mb·s/cp of the micro-batch,
    ``parallel`` = (tp, ep, etp)."""
    if experts <= 0:
        return ExpertShard(0.0, 0.0, 0.0)
    tp, ep, etp = parallel
    local = experts / ep
    pairs = tokens * experts_per_token * capacity_factor * etp / tp
    return ExpertShard(local, pairs / local, expert_ffn / etp)
