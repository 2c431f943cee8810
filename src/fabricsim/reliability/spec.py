"""The failure-rate catalog document, validated (layer L8).

One YAML per rate set under ``catalog/data/reliability/``: per-cause event counts observed on a
reference deployment (converted to per-component rates by :func:`rates`), checkpoint storage and
restart defaults. The api reads the file (numbers unwrapped from ``{value, source}``) and validates
it here; nothing here touches the disk.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat, PositiveFloat, PositiveInt

from fabricsim.reliability.checkpoint import RestartCost
from fabricsim.reliability.failures import Component, ComponentCounts, FailureCause, rate_from_events
from fabricsim.specs.device import Generation


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReferenceSpec(_Spec):
    """The deployment the events were counted on: a catalog ``system`` at ``gpus`` over ``days``."""

    system: str
    gpus: PositiveInt
    days: PositiveFloat


class CauseSpec(_Spec):
    component: Component
    events: NonNegativeFloat


class StorageSpec(_Spec):
    pfs_bandwidth_Bps: PositiveFloat


class RestartSpec(_Spec):
    detection_s: NonNegativeFloat
    reschedule_s: NonNegativeFloat
    startup_s: NonNegativeFloat
    warmup_s: NonNegativeFloat

    def cost(self) -> RestartCost:
        return RestartCost(self.detection_s, self.reschedule_s, self.startup_s, self.warmup_s)


class FailureRatesSpec(_Spec):
    """``generations``: the GPU generations (``Generation`` values) the set was observed on; goodput
    picks by the system's device generation among the shipped sets."""

    name: str
    description: str = ""
    generations: tuple[Generation, ...] = ()
    reference: ReferenceSpec
    causes: dict[str, CauseSpec] = Field(min_length=1)
    storage: StorageSpec
    restart: RestartSpec
    link_repair_s: PositiveFloat
    cross_check: dict[str, PositiveFloat] = Field(default_factory=dict)
    sources: dict[str, str] = Field(default_factory=dict)


def rates(spec: FailureRatesSpec, reference: ComponentCounts) -> tuple[FailureCause, ...]:
    """Per-component rates (1/s): each cause's events over its component count in ``reference``
    (the counts of ``spec.reference``) and the reference duration."""
    out = []
    for name, cause in spec.causes.items():
        count = reference.of(cause.component)
        out.append(FailureCause(name, cause.component, rate_from_events(cause.events, count, spec.reference.days)))
    return tuple(out)
