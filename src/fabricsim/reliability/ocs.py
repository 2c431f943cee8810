"""The blast radius of a failed cube with and without optical circuit switching (layer L8).

A TPU v4/v5p-style pod is a pool of 4x4x4 cubes (64 chips, 16 hosts); a job runs on a slice of
whole cubes. With optical circuit switches (OCS) between the cubes, a failed cube takes down only the
slice using it: the job restarts from its checkpoint on a spare healthy cube once the OCS has re-aimed
its mirrors (no re-cabling), and any ``cubes`` healthy cubes of the pool make a slice. Without OCS (a
statically wired pod) the cubes are cabled into fixed tori: a failed cube takes down the whole torus it
is wired into until it is repaired, and a slice is a fixed block of wired cubes that must all be
healthy (Jouppi et al., ISCA 2023, "TPU v4: An Optically Reconfigurable Supercomputer", sec. 2: OCS
for availability; the v3 pod it replaced was one statically wired torus).

* A cube fails at the rate of the job-stopping hardware causes of its components: the rate set's
  per-GPU causes x 64 chips, per-host causes x its hosts, per-NIC causes x its NICs (a cause on any
  one chip, host or NIC breaks the cube's ICI torus, since a torus cannot route around a missing chip
  without the OCS). Software causes (:data:`SOFTWARE_CAUSES`) restart the job but take no cube out of
  service and are left out; scale-out switch and cable causes belong to the data-center network.
* Cube availability A = 1 / (1 + rate x repair_s) (steady state of fail / repair, MTTF / (MTTF + MTTR)).
* Slice availability: with OCS, P(Binomial(pool, A) >= cubes), the probability that at least the
  slice's cubes of the pool are healthy; without OCS, A^cubes (every cube of its fixed block).

Pure math; the api (:func:`fabricsim.api.goodput`) supplies the rates and the pod.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabricsim.errors import FabricsimError
from fabricsim.reliability.failures import DAY_S, Component, FailureCause

CUBE_CHIPS = 64  # a 4x4x4 cube (Cloud TPU v5p docs; Jouppi et al., ISCA 2023)

SOFTWARE_CAUSES = frozenset({"software_bug", "nccl_watchdog", "dependency"})
"""Causes of the shipped rate sets (Llama 3 Table 5 names) that stop the job without a failed part."""

RECONFIGURATION_S = 10.0
"""Seconds for the OCS to rebuild a slice's torus from other cubes. Assumed: Google's Gemini report
(Gemini Team, arXiv 2312.11805, sec. 3) is quoted by secondary sources as reconfiguring 4x4x4 cubes
into an arbitrary 3D torus "in around 10 seconds" (TPU v4 SuperPods); the primary text was not read
here, and the MEMS mirrors themselves switch in milliseconds. Either is small beside a restart."""

CUBE_REPAIR_S = DAY_S
"""Seconds to repair a failed cube (swap the failed host or board, test, return it to the pool).
Assumed: no published TPU repair time; one day."""


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod of ``pool_cubes`` OCS-joined cubes of ``hosts_per_cube`` hosts and ``nics_per_cube`` NICs;
    without OCS, ``wired_chips`` chips share one statically wired torus (the blast radius)."""

    pool_cubes: int
    hosts_per_cube: int
    nics_per_cube: int
    wired_chips: int


@dataclass(frozen=True, slots=True)
class CubeBlastRadius:
    """What one failed cube costs a job of ``cubes`` cubes, with and without OCS (module docstring)."""

    cubes: int
    pool_cubes: int
    cube_rate_per_s: float
    cube_availability: float
    slice_availability_ocs: float
    slice_availability_static: float
    blast_radius_chips_ocs: int
    blast_radius_chips_static: int
    reconfiguration_s: float
    repair_s: float
    resume_s_ocs: float
    resume_s_static: float

    def to_json(self) -> dict[str, object]:
        return {
            "cube_chips": CUBE_CHIPS,
            "cubes": self.cubes,
            "pool_cubes": self.pool_cubes,
            "cube_failures_per_day": self.cube_rate_per_s * DAY_S,
            "cube_repair_s": self.repair_s,
            "cube_availability": self.cube_availability,
            "reconfiguration_s": self.reconfiguration_s,
            "blast_radius_chips": {"ocs": self.blast_radius_chips_ocs, "static": self.blast_radius_chips_static},
            "resume_after_cube_failure_s": {"ocs": self.resume_s_ocs, "static": self.resume_s_static},
            "slice_availability": {"ocs": self.slice_availability_ocs, "static": self.slice_availability_static},
        }


def cube_rate_per_s(causes: tuple[FailureCause, ...], pod: Pod) -> float:
    """Failures per second of one cube: the hardware causes of its chips, hosts and NICs."""
    per_cube = {Component.GPU: CUBE_CHIPS, Component.HOST: pod.hosts_per_cube, Component.NIC: pod.nics_per_cube}
    return sum(c.rate_per_s * per_cube[c.component] for c in causes
               if c.component in per_cube and c.name not in SOFTWARE_CAUSES)  # fmt: skip


def availability(rate_per_s: float, repair_s: float) -> float:
    """Steady-state fraction of time a unit failing at ``rate_per_s`` and repaired in ``repair_s`` is up."""
    return 1.0 / (1.0 + rate_per_s * repair_s)


def at_least(needed: int, pool: int, up: float) -> float:
    """P(Binomial(pool, up) >= needed), summed exactly over k = needed..pool."""
    if not 0 <= needed <= pool:
        raise ValueError(f"needed must be in 0..{pool}, got {needed}")
    return min(1.0, sum(math.comb(pool, k) * up**k * (1.0 - up) ** (pool - k) for k in range(needed, pool + 1)))


def blast_radius(
    chips: int, pod: Pod, causes: tuple[FailureCause, ...], restart_s: float,
    reconfiguration_s: float = RECONFIGURATION_S, repair_s: float = CUBE_REPAIR_S,
) -> CubeBlastRadius:  # fmt: skip
    """A job of ``chips`` chips (whole cubes) on ``pod``: its slice's availability and what one failed
    cube costs with and without OCS; ``restart_s`` the job's restart (detection to warm, checkpoint load)."""
    cubes, left = divmod(chips, CUBE_CHIPS)
    if left or not 1 <= cubes <= pod.pool_cubes:
        problem = f"{chips} chips are not whole {CUBE_CHIPS}-chip cubes of a {pod.pool_cubes}-cube pod"
        raise FabricsimError("gpus", problem, f"use a multiple of {CUBE_CHIPS} up to {pod.pool_cubes * CUBE_CHIPS}")
    rate = cube_rate_per_s(causes, pod)
    up = availability(rate, repair_s)
    return CubeBlastRadius(
        cubes=cubes,
        pool_cubes=pod.pool_cubes,
        cube_rate_per_s=rate,
        cube_availability=up,
        slice_availability_ocs=at_least(cubes, pod.pool_cubes, up),
        slice_availability_static=up**cubes,
        blast_radius_chips_ocs=chips,
        blast_radius_chips_static=max(pod.wired_chips, chips),
        reconfiguration_s=reconfiguration_s,
        repair_s=repair_s,
        resume_s_ocs=restart_s + reconfiguration_s,
        resume_s_static=restart_s + repair_s,
    )
