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

from fabricsim.specs import ModelSpec, SystemSpec


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
        }


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """A suite's entries; ``calibration`` says which fitted constants saw these rows ("" = none);
    ``skipped`` lists the shipped rows the suite cannot predict, as (id, reason)."""

    name: str
    entries: tuple[ValidationEntry, ...]
    calibration: str = ""
    skipped: tuple[tuple[str, str], ...] = ()

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
        return payload


def data_path(filename: str) -> Path:
    return Path(str(resources.files("fabricsim.validation") / "data" / filename))


def load_entries(filename: str) -> list[dict[str, Any]]:
    """The ``entries`` list of a shipped validation file."""
    with data_path(filename).open(encoding="utf-8") as handle:
        return list(yaml.safe_load(handle)["entries"])
