"""The offload choices a training plan searches (layer L8).

An offload choice is a non-empty set of tensor classes (optimizer, weights, activations) on one
memory tier the system has (:class:`fabricsim.specs.OffloadSpec`). The walk tries them on a
layout only where they can help:

* the layout does not fit in HBM by itself: the choices with which it fits in HBM *and* on the
  tier are timed (the exposed transfers make each one slower or as fast as the same layout
  would be without offload, so a layout that fits without it gains nothing from them); or
* the objective is memory (offloading lowers HBM bytes), or a tier's CPU could run the Adam step
  faster than the GPU (its DRAM bandwidth per GPU above the GPU's usable HBM bandwidth -- no
  shipped system, but a user's YAML might say so): then every fitting choice is timed too.

So the fastest step is exact over every (layout, offload) pair; for the step objective, a
variant that only ties a fitting layout's step with less HBM is not tried.

Memory pruning stays exact: for each choice, HBM and tier bytes do not shrink as the micro-batch
grows, except the gradients under optimizer offload, which stream out per bucket once a step has
a single micro-batch (:mod:`fabricsim.transformer.memory_tiers`); so when a micro-batch size fits
with no choice, the walk still sizes the single-micro-batch size before pruning the rest.
"""

from __future__ import annotations

from itertools import combinations

from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.specs import SystemSpec
from fabricsim.specs.memory_tier import OFFLOAD_ORDER, MemoryTierKind, OffloadSpec

NO_OFFLOAD_KEY = (0, 0, 0, 0)


def offload_choices(system: SystemSpec, tiers: tuple[str, ...] | None = None) -> tuple[OffloadSpec, ...]:
    """Every non-empty set of classes on every allowed tier of ``system``, canonical order
    (tier, then fewer classes first). ``tiers`` None: every tier the system lists."""
    if tiers is None:
        kinds = tuple(kind for kind in MemoryTierKind if kind in system.memory_tiers)
    else:
        kinds = tuple(_tier_kind(name) for name in tiers)
        for kind in kinds:
            system.memory_tier(kind)  # names the tier the system lacks
        kinds = tuple(kind for kind in MemoryTierKind if kind in kinds)
    sets = [group for size in (1, 2, 3) for group in combinations(OFFLOAD_ORDER, size)]
    return tuple(OffloadSpec(group, kind) for kind in kinds for group in sets)


def by_tier(choices: tuple[OffloadSpec, ...]) -> tuple[tuple[OffloadSpec, ...], ...]:
    """``choices`` grouped by tier, each group ordered with its all-classes set last (the set that
    needs the least HBM; :meth:`TrainingContext.fitting_offloads` tries it first)."""
    groups = []
    for kind in MemoryTierKind:
        group = sorted((c for c in choices if c.tier is kind), key=lambda c: (len(c.classes), c.key))
        if group:
            groups.append(tuple(group))
    return tuple(groups)


def _tier_kind(name: str) -> MemoryTierKind:
    try:
        return MemoryTierKind(str(name).strip().lower())
    except ValueError:
        raise unknown_name("offload-tier", str(name), [k.value for k in MemoryTierKind]) from None


def offload_key(offload: OffloadSpec | None) -> tuple[int, ...]:
    """Ranking tie-break of an offload choice (no offload first)."""
    if offload is None:
        return NO_OFFLOAD_KEY
    tier, *classes = offload.key
    return (1 + tier, *classes)


def cpu_can_beat_gpu(system: SystemSpec, choices: tuple[OffloadSpec, ...], hbm_Bps: float) -> bool:
    """True when a searched tier's DRAM bandwidth per GPU exceeds the GPU's usable HBM bandwidth
    (then a CPU Adam step could be faster than the GPU's, and fitting layouts try offload too)."""
    kinds = {choice.tier for choice in choices}
    return any(system.memory_tier(kind).memory_bandwidth_per_gpu_Bps > hbm_Bps for kind in kinds)


def check_choices(choices: tuple[OffloadSpec, ...], requested: bool) -> None:
    """Raise when offload search was asked for explicitly but the system has no tier."""
    if requested and not choices:
        raise FabricsimError(
            "search-offload", "the system has no memory tier to offload to", "add memory_tiers to the system YAML"
        )
