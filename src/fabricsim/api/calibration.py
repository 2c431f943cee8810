"""Calibrate a system from nccl-tests runs (public API, layer L9).

The CLI reads the logs (:mod:`fabricsim.io.nccl_tests`) and passes the parsed runs here; this turns
the base system name into a spec, fits it (:mod:`fabricsim.calibration`) and reports, per measured
row, the busbw the calibrated system predicts through the same collective model that
``fabricsim collective`` uses, so the residuals are those a user will see.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fabricsim import catalog, collectives
from fabricsim.calibration import NcclTestsRun
from fabricsim.calibration.system import CalibratedSystem, calibrate_system
from fabricsim.units import to_GBps

RESIDUAL_FROM_BYTES = 2**20  # the summary's "large sizes": >= 1 MiB, where bandwidth, not latency, dominates


@dataclass(frozen=True, slots=True)
class Residual:
    """One measured row against the calibrated system: busbw in GB/s, error = predicted/measured - 1."""

    op: str
    ranks: int
    size_bytes: int
    measured_busbw_GBps: float
    predicted_busbw_GBps: float
    error: float


@dataclass(frozen=True, slots=True)
class CalibrationResult:
    """A calibrated system: its YAML document, the residual of every measured row, tier figures."""

    system: str
    base_system: str
    calibrated: CalibratedSystem
    residuals: tuple[Residual, ...]

    @property
    def document(self) -> dict[str, Any]:
        return self.calibrated.document

    def summary(self, min_bytes: int = 0) -> dict[str, float]:
        errors = [abs(r.error) for r in self.residuals if r.size_bytes >= min_bytes]
        if not errors:
            return {"rows": 0, "median_abs_error": 0.0, "max_abs_error": 0.0}
        return {"rows": len(errors), "median_abs_error": statistics.median(errors), "max_abs_error": max(errors)}

    def to_json(self) -> dict[str, Any]:
        runs = []
        for run, fit in zip(self.calibrated.runs, self.calibrated.fits, strict=True):
            lines = [
                {
                    "latency_s": line.latency_s,
                    "bandwidth_GBps": to_GBps(line.bandwidth_Bps),
                    "min_bytes": line.min_bytes,
                    "max_bytes": line.max_bytes,
                }
                for line in fit.lines
            ]
            runs.append(
                {
                    "log": run.source,
                    "op": run.op,
                    "ranks": run.ranks,
                    "nodes": run.nodes,
                    "devices": list(run.devices),
                    "lines": lines,
                }
            )
        tiers = [
            {
                "tier": t.tier,
                "field": t.field,
                "bandwidth_GBps": None if t.bandwidth_Bps is None else to_GBps(t.bandwidth_Bps),
                "base_GBps": to_GBps(t.base_Bps),
                "note": t.note,
            }
            for t in self.calibrated.tiers
        ]
        rows = [
            {
                "op": r.op,
                "ranks": r.ranks,
                "size_bytes": r.size_bytes,
                "measured_busbw_GBps": r.measured_busbw_GBps,
                "predicted_busbw_GBps": r.predicted_busbw_GBps,
                "error": r.error,
            }
            for r in self.residuals
        ]
        return {
            "system": self.system,
            "base_system": self.base_system,
            "runs": runs,
            "tiers": tiers,
            "residuals": rows,
            "summary": self.summary(),
            "summary_from_1MiB": self.summary(RESIDUAL_FROM_BYTES),
        }


def _residuals(calibrated: CalibratedSystem) -> tuple[Residual, ...]:
    out = []
    for run in calibrated.runs:
        op = collectives.parse_op(run.op)
        group = collectives.place_group(calibrated.spec, run.ranks)
        factor = collectives.bus_factor(op, run.ranks)
        for row in run.rows:
            time_s = collectives.estimate(op, row.size_bytes, group).time_s
            measured = to_GBps(row.size_bytes / row.time_s * factor)
            predicted = to_GBps(row.size_bytes / time_s * factor)
            error = predicted / measured - 1.0 if measured > 0 else 0.0
            out.append(Residual(run.op, run.ranks, row.size_bytes, measured, predicted, error))
    return tuple(out)


def calibrate_nccl_tests(runs: Sequence[NcclTestsRun], *, system: str, name: str) -> CalibrationResult:
    """Calibrate catalog system (or YAML) ``system`` from parsed nccl-tests ``runs``; the
    calibrated system is called ``name``. Busbw is recomputed from size and time (nccl-tests'
    definitions), so the printed, rounded busbw column is not trusted for small sizes."""
    base = catalog.load_system(system)
    calibrated = calibrate_system(base, catalog.system_document(system), tuple(runs), name)
    return CalibrationResult(name, base.name, calibrated, _residuals(calibrated))
