"""Why a plan loses to the best one: the parts of its step (or request) that cost more (layer L8).

A plan's step time is the sum of its breakdown (compute, recompute, each collective, the
pipeline bubble, exposed data-parallel communication, optimizer), so the difference to the best
plan is the sum of the per-part differences; the largest positive ones are the reasons, given as
a share of the best plan's step ("pipeline bubble +12%").
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_REASONS = 3
MIN_SHARE = 0.001  # differences under 0.1% of the best step are not worth naming

_PART_NAMES = {
    "forward_compute_s": "forward compute",
    "backward_compute_s": "backward compute",
    "recompute_s": "recomputation",
    "tp_comm_s": "TP comm",
    "cp_comm_s": "CP comm",
    "ep_comm_s": "EP comm",
    "pp_comm_s": "PP send/recv",
    "pipeline_bubble_s": "pipeline bubble",
    "dp_comm_s": "exposed DP comm",
    "optimizer_s": "optimizer",
    "offload_s": "exposed offload",
}


def part_deltas(best: dict[str, float], other: dict[str, float], reference: float) -> list[tuple[str, float]]:
    """(part, (other - best) / reference) for every part, largest increase first (name breaks ties)."""
    deltas = [(name, (other.get(name, 0.0) - best.get(name, 0.0)) / reference) for name in sorted(other)]
    return sorted(deltas, key=lambda item: (-item[1], item[0]))


def _format(parts: list[tuple[str, float]], names: dict[str, str]) -> tuple[str, ...]:
    return tuple(f"{names.get(name, name)} {share * 100:+.1f}%" for name, share in parts[:MAX_REASONS])


@dataclass(frozen=True, slots=True)
class PlanFigures:
    """What a plan is compared on: its time breakdown (adds up to ``step_time_s``) and memory per GPU."""

    time_breakdown_s: dict[str, float]
    step_time_s: float
    memory_bytes: float


def train_reasons(best: PlanFigures, other: PlanFigures) -> tuple[str, ...]:
    """Reasons ``other`` ranks below ``best``, largest first.

    Slower plans name the parts that grew, as shares of the best step time. A plan that is not
    slower lost on memory (the memory objective, or a step-time tie broken by memory): it names
    the extra memory (and its faster step, if any).
    """
    memory = f"memory +{(other.memory_bytes / best.memory_bytes - 1) * 100:.1f}%"
    change = other.step_time_s / best.step_time_s - 1.0
    if change <= -MIN_SHARE:  # faster, ranked lower for its memory
        return (memory, f"step {change * 100:+.1f}%")
    deltas = part_deltas(best.time_breakdown_s, other.time_breakdown_s, best.step_time_s)
    reasons = _format([(name, share) for name, share in deltas if share >= MIN_SHARE], _PART_NAMES)
    if not reasons:
        reasons = (f"step {change * 100:+.2f}%",)
    name, share = deltas[-1]  # the largest saving, if any, puts the losses in proportion
    if share <= -MIN_SHARE:
        reasons += (f"despite {_PART_NAMES.get(name, name)} {share * 100:+.1f}%",)
    if change < MIN_SHARE and other.memory_bytes > best.memory_bytes:
        reasons += (memory,)
    return reasons
