"""Collective communication, analytic fidelity (layer L4): ops, algorithms, NCCL-style selection,
costs and bounds. See shared/reference/collective-cost-models.md for the formulas' sources."""

from fabricsim.collectives.bounds import lower_bound_s, rank_bandwidth_Bps
from fabricsim.collectives.model import Estimate, estimate, runnable, unavailable_reason
from fabricsim.collectives.ops import Algorithm, CollectiveOp, Protocol, bus_factor, parse_algorithm, parse_op
from fabricsim.collectives.placement import Group, place_group

__all__ = [
    "Algorithm",
    "CollectiveOp",
    "Estimate",
    "Group",
    "Protocol",
    "bus_factor",
    "estimate",
    "lower_bound_s",
    "parse_algorithm",
    "parse_op",
    "place_group",
    "rank_bandwidth_Bps",
    "runnable",
    "unavailable_reason",
]
