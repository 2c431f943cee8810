"""MLPerf Inference across vendors: every catalog system's Llama 2 70B, Llama 3.1 405B and Mixtral 8x7B
Offline and Server results, reproduced with ``serve`` (layer L8; issue 25, item 4).

The suite is the cross-vendor superset of ``validate serving``: the rows of ``data/mlperf-inference.yaml``
(AMD's submissions) plus every row of the serving suite's ``data/serving-mlperf.yaml`` (NVIDIA's), of one
schema, each simulated by :func:`fabricsim.validation.serving.row_entry` (nothing is written twice). Nothing
is fitted to these rows, so a vendor's held-out error is its rows' error and the leave-one-vendor-out error
is the mean |error| over the other vendors' rows; both are reported per vendor in the suite's ``holdout``.
Results of catalog accelerators the suite does not predict (Google TPU: Stable Diffusion XL only; no Gaudi 3
result) are listed in the suite's ``skipped`` with the reason (``not_added`` in the data file).
"""

from __future__ import annotations

from typing import Any

from fabricsim.validation import serving
from fabricsim.validation.base import HoldoutError, SpecSource, SuiteResult, ValidationEntry, load_entries

DATA_FILE = "mlperf-inference.yaml"


def rows() -> list[dict[str, Any]]:
    """The serving suite's rows, then this suite's own (ids are unique across both)."""
    return load_entries(serving.DATA_FILE) + load_entries(DATA_FILE)


def not_added() -> list[tuple[str, str]]:
    """(id, reason) of each submission of a catalog accelerator that the suite does not predict."""
    return [(str(item["id"]), str(item["reason"])) for item in load_entries(DATA_FILE, "not_added")]


def vendor_errors(vendors: list[str], entries: tuple[ValidationEntry, ...]) -> tuple[HoldoutError, ...]:
    """Per vendor: the mean |error| of its rows, and of every other vendor's rows (leave-one-vendor-out)."""
    result = []
    for vendor in sorted(set(vendors)):
        own = [abs(e.error) for v, e in zip(vendors, entries, strict=True) if v == vendor]
        rest = [abs(e.error) for v, e in zip(vendors, entries, strict=True) if v != vendor]
        result.append(HoldoutError("vendor", vendor, sum(own) / len(own), len(own)))
        if rest:
            result.append(HoldoutError("leave-one-vendor-out", vendor, sum(rest) / len(rest), len(rest)))
    return tuple(result)


CALIBRATION = (
    "out-of-sample: no constant fitted on these rows; compute from each device's kernel benchmarks in the "
    "catalog (figures a device lacks on its generation defaults: catalog show says which); each submission's "
    "own layout, batch, token budget, KV memory fraction and scheduler from its configs; dataset lengths per request"
)


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """Every row; the per-vendor and leave-one-vendor-out errors always (they need no re-run); the
    ``not_added`` submissions in ``skipped``."""
    del holdout  # nothing is calibrated on these rows: the held-out errors are the rows' own
    data = rows()
    entries = tuple(serving.row_entry(row, source) for row in data)
    vendors = [str(row["vendor"]) for row in data]
    return SuiteResult("mlperf-inference", entries, calibration=CALIBRATION, skipped=tuple(not_added()),
                       holdout=vendor_errors(vendors, entries))
