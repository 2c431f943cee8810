"""Serialise results (layer L10): deterministic JSON text and result files."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


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


def write_atomic(path: str | Path, text: str) -> None:
    """Write a file all at once (temp file + rename) so nothing is left half-written."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file normal permissions
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
