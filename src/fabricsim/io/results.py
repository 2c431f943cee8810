"""Serialise results (layer L10): deterministic JSON text and result files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from fabricsim import textfile


def _clean(value: Any) -> Any:
    """Make values JSON-safe and stable: enums to values, NaN/inf to None, tuples to lists."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "value") and not isinstance(value, (int, float, str, bool)):
        return _clean(value.value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def dumps(payload: dict[str, Any]) -> str:
    """JSON text with sorted keys: byte-identical for identical results."""
    return json.dumps(_clean(payload), sort_keys=True, indent=2)


check_output_path = textfile.check_output_path  # io is where the CLI reaches file checks


def write_atomic(path: str | Path, text: str, field: str = "output") -> None:
    """Write a file all at once, only over nothing or a regular file (see :func:`fabricsim.textfile.write_atomic`)."""
    textfile.write_atomic(path, text, field)
