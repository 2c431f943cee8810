"""Fitting a system's figures from measurements (layer L8): nccl-tests logs to alpha-beta lines
per (op, group) and to effective link bandwidths, written as a calibrated system YAML."""

from fabricsim.calibration.fit import FitResult, fit_lines, predict_s
from fabricsim.calibration.measurements import NcclTestsRow, NcclTestsRun

__all__ = [
    "FitResult",
    "NcclTestsRow",
    "NcclTestsRun",
    "fit_lines",
    "predict_s",
]
