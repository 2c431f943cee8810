"""Failure model: per-cause rates scaled by the component counts of a cluster (layer L8).

A cause (faulty GPU, HBM, NIC, switch, cable, software bug, ...) fails at ``rate_per_s`` per
component of its class; the cluster's rate for it is that times the number of such components.
Causes are independent Poisson processes, so the job's interruption rate is their sum and the
cause of each interruption is drawn with probability rate_i / Σ rate. A failure either stops the
job (restart from the last checkpoint) or, for a cable between two switches when the routing can
go around it, only slows the collectives until the cable is repaired.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from fabricsim.errors import FabricsimError

DAY_S = 86_400.0


class Component(str, Enum):
    """What a cause's rate is counted per."""

    GPU = "gpu"
    HOST = "host"
    NIC = "nic"
    SWITCH = "switch"  # scale-out switches (leaf, spine, core)
    CABLE = "cable"  # scale-out cables with their optics: NIC-switch and switch-switch


class LinkFailurePolicy(str, Enum):
    """What a failed switch-to-switch cable does: ``stop`` the job, or ``reroute`` around it
    (the fabric's redundant paths carry on, slower, until the repair)."""

    STOP = "stop"
    REROUTE = "reroute"


@dataclass(frozen=True, slots=True)
class ComponentCounts:
    """Components of one job: GPUs, hosts and NICs from the system; switches and cables from the
    topology builder. ``fabric_cables`` (switch-switch) is the part of ``cables`` with spare paths."""

    gpus: int
    hosts: int
    nics: int
    switches: int
    cables: int
    fabric_cables: int

    def of(self, component: Component) -> int:
        return {
            Component.GPU: self.gpus,
            Component.HOST: self.hosts,
            Component.NIC: self.nics,
            Component.SWITCH: self.switches,
            Component.CABLE: self.cables,
        }[component]


@dataclass(frozen=True, slots=True)
class FailureCause:
    """One cause: ``rate_per_s`` failures per second per component of class ``component``."""

    name: str
    component: Component
    rate_per_s: float


@dataclass(frozen=True, slots=True)
class FailureRates:
    """Cluster-wide rates (per second) of the causes that stop the job, by name, and the rate of
    switch-to-switch cable failures that only degrade it (0 under ``LinkFailurePolicy.STOP``)."""

    names: tuple[str, ...]
    stop_rate_per_s: np.ndarray  # float64 [causes]
    degrade_rate_per_s: float

    @property
    def total_per_s(self) -> float:
        return float(self.stop_rate_per_s.sum())

    @property
    def mttf_s(self) -> float:
        """Mean time between job-stopping failures, seconds (1 / Σ rates)."""
        total = self.total_per_s
        return float("inf") if total == 0 else 1.0 / total


def cluster_rates(causes: tuple[FailureCause, ...], counts: ComponentCounts, policy: LinkFailurePolicy) -> FailureRates:
    """Scale per-component rates by ``counts``. Under ``REROUTE`` a cable cause is split in
    proportion to the cable counts: the switch-to-switch share degrades, the NIC-to-switch share
    (no spare path: the NIC's rank is cut off) still stops the job."""
    if not causes:
        raise FabricsimError("failure-rates", "no failure causes given", "list at least one cause")
    stop = np.empty(len(causes))
    degrade = 0.0
    for i, cause in enumerate(causes):
        if not (np.isfinite(cause.rate_per_s) and cause.rate_per_s >= 0):
            raise FabricsimError("failure-rates", f"{cause.name}: rate must be finite and >= 0")
        rate = cause.rate_per_s * counts.of(cause.component)
        if cause.component is Component.CABLE and policy is LinkFailurePolicy.REROUTE and counts.cables:
            spare = rate * counts.fabric_cables / counts.cables
            degrade += spare
            rate -= spare
        stop[i] = rate
    return FailureRates(tuple(c.name for c in causes), stop, degrade)


def rate_from_events(events: float, components: int, days: float) -> float:
    """Per-component rate (1/s) from ``events`` observed on ``components`` units over ``days``."""
    if components <= 0 or days <= 0 or events < 0:
        raise FabricsimError("failure-rates", "events >= 0 over a positive component count and duration")
    return events / (components * days * DAY_S)
