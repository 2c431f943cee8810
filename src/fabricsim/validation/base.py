"""Published-measurement suites: shared types and data loading (layer L8).

The YAML files under ``data/`` are copies of ``shared/validation`` with their sources; the
suites read them from the installed package so ``fabricsim validate`` works anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import yaml

from fabricsim.specs import DeviceSpec, ModelSpec, SystemSpec


class SpecSource(Protocol):
    """Where a suite gets the systems and models its rows name: the API passes the catalog
    (only ``api`` turns catalog names into specs; suites never import it)."""

    def load_system(self, name_or_path: str) -> SystemSpec: ...

    def load_model(self, name_or_path: str) -> ModelSpec: ...


@dataclass(frozen=True, slots=True)
class ValidationEntry:
    """One published measurement next to fabricsim's prediction of it."""

    id: str
    metric: str
    unit: str
    measured: float
    predicted: float
    source: str
    detail: str = ""
    command: str | None = None  # the CLI line reproducing ``predicted`` (validation/commands.py)
    command_output: str = ""  # which key of the command's --json output it is: KEY, KEY x F or KEY / D
    command_note: str = ""  # what the command cannot express (no CLI option), or why there is none

    @property
    def error(self) -> float:
        """Signed relative error (predicted - measured) / measured."""
        return (self.predicted - self.measured) / self.measured

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "metric": self.metric,
            "unit": self.unit,
            "measured": self.measured,
            "predicted": self.predicted,
            "error": self.error,
            "source": self.source,
            "detail": self.detail,
            "command": self.command,
            **({"command_output": self.command_output} if self.command else {}),
            **({"command_note": self.command_note} if self.command_note else {}),
        }


@dataclass(frozen=True, slots=True)
class HoldoutError:
    """Mean |error| of the ``rows`` rows of ``group`` predicted with that group's calibration data
    held out (``kind``: leave-one-device-out, leave-one-dtype-out)."""

    kind: str
    group: str
    mean_abs_error: float
    rows: int

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "group": self.group, "mean_abs_error": self.mean_abs_error, "rows": self.rows}


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """A suite's entries; ``calibration`` says what the compute model was calibrated on and whether
    these rows are in-sample; ``skipped`` lists the shipped rows the suite cannot predict, as (id,
    reason); ``holdout`` the held-out-calibration errors (may be empty)."""

    name: str
    entries: tuple[ValidationEntry, ...]
    calibration: str = ""
    skipped: tuple[tuple[str, str], ...] = ()
    holdout: tuple[HoldoutError, ...] = ()

    @property
    def mean_abs_error(self) -> float:
        return sum(abs(e.error) for e in self.entries) / len(self.entries) if self.entries else 0.0

    @property
    def max_abs_error(self) -> float:
        return max((abs(e.error) for e in self.entries), default=0.0)

    @property
    def bias(self) -> float:
        """Mean signed error: > 0 when the suite over-predicts on average."""
        return sum(e.error for e in self.entries) / len(self.entries) if self.entries else 0.0

    def to_json(self) -> dict[str, object]:
        payload: dict[str, object] = {
            "name": self.name,
            "entries": [e.to_json() for e in self.entries],
            "mean_abs_error": self.mean_abs_error,
            "max_abs_error": self.max_abs_error,
            "bias": self.bias,
        }
        if self.calibration:
            payload["calibration"] = self.calibration
        if self.skipped:
            payload["skipped"] = [{"id": entry_id, "reason": reason} for entry_id, reason in self.skipped]
        if self.holdout:
            payload["holdout"] = [h.to_json() for h in self.holdout]
        return payload


def data_path(filename: str) -> Path:
    return Path(str(resources.files("fabricsim.validation") / "data" / filename))


def load_entries(filename: str, section: str = "entries") -> list[dict[str, Any]]:
    """The ``entries`` list (or another ``section``) of a shipped validation file."""
    with data_path(filename).open(encoding="utf-8") as handle:
        return list(yaml.safe_load(handle)[section])


def system_without_kernels(system: SystemSpec) -> SystemSpec:
    """``system`` whose device has no kernel benchmarks (the compute model's generation defaults):
    how a held-out device is predicted."""
    device = system.device.model_copy(update={"kernels": None})
    return system.model_copy(update={"device": device})


def device_without_format(device: DeviceSpec, fmt: str) -> DeviceSpec:
    """``device`` keeping only its 16-bit GEMM benchmarks (for a ``fmt`` other than BF16/FP16): a
    held-out dtype's GEMMs reach the fraction of their peak that BF16 GEMMs reach."""
    kernels = device.kernels
    if kernels is None or fmt in ("bf16", "fp16"):
        return device
    gemm = {key: value for key, value in kernels.gemm.items() if key in ("bf16", "fp16")}
    return device.model_copy(update={"kernels": kernels.model_copy(update={"gemm": gemm})})


def system_without_format(system: SystemSpec, fmt: str) -> SystemSpec:
    """``system`` whose device is :func:`device_without_format`."""
    return system.model_copy(update={"device": device_without_format(system.device, fmt)})


def mean_abs_error(pairs: list[tuple[float, float]]) -> float:
    """Mean |predicted - measured| / measured over (measured, predicted) pairs."""
    return sum(abs(p - m) / m for m, p in pairs) / len(pairs) if pairs else 0.0
