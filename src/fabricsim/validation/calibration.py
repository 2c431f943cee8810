"""Residuals of a calibrated system (layer L8): every nccl-tests row it was fitted on, measured
busbw next to what the collective model now predicts (``fabricsim validate --system FILE``).

In-sample by construction: the lines were fitted on these rows, so this checks the fit and the
model's use of it, not predictive accuracy (the suite says so in ``calibration``).
"""

from __future__ import annotations

from fabricsim.collectives import CollectiveOp, bus_factor, estimate, place_group
from fabricsim.errors import FabricsimError
from fabricsim.specs import SystemSpec
from fabricsim.validation.base import SuiteResult, ValidationEntry
from fabricsim.validation.commands import collective_command


def run_system(system: SystemSpec, name_or_path: str | None = None) -> SuiteResult:
    """One entry per measured row of each of ``system``'s collective fits (busbw, GB/s);
    ``name_or_path``: how the user named the system (its rows' commands name it so)."""
    fits = [fit for fit in system.collective_fits if fit.measured_sizes_bytes]
    if not fits:
        raise FabricsimError(
            "system",
            f"{system.name} carries no nccl-tests measurements",
            "give a system written by 'fabricsim calibrate nccl-tests'",
        )
    entries = []
    for fit in fits:
        op = CollectiveOp(fit.op)
        group = place_group(system, fit.ranks)
        factor = bus_factor(op, fit.ranks)
        source = system.sources.get(f"collective_fits[{system.collective_fits.index(fit)}].measured_time_s", "")
        for size, time_s in zip(fit.measured_sizes_bytes, fit.measured_time_s, strict=True):
            predicted_s = estimate(op, size, group).time_s
            entries.append(
                ValidationEntry(
                    id=f"{system.name}-{fit.op}-{fit.ranks}x{fit.nodes}-{size}",
                    metric="busbw",
                    unit="GB/s",
                    measured=size / time_s * factor / 1e9,
                    predicted=size / predicted_s * factor / 1e9,
                    source=source,
                    detail=f"{fit.op} on {fit.ranks} ranks / {fit.nodes} nodes, {size} B",
                    command=collective_command(op.value, name_or_path or system.name, fit.ranks, size),
                    command_output="busbw_GBps",
                )
            )
    return SuiteResult(
        "calibration", tuple(entries), calibration="in-sample: the measured lines were fitted on these rows"
    )
