"""Reading values out of a result JSON for drawing (layer L10).

A result file may come from anywhere, so every value a chart needs is checked here: a number is a
finite JSON number (not a bool, not an integer beyond float range), a mapping is an object, a list
is a list. A value that fails raises :class:`MalformedError` with its dotted key path; the report turns
it into one error naming the file and the key (:func:`fabricsim.report.html.render_report`).
Missing optional parts are simply not drawn.
"""

from __future__ import annotations

import math
from typing import Any


class MalformedError(Exception):
    """A value the report cannot draw: ``key`` is its dotted path in the result."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key} {problem}")
        self.key = key
        self.problem = problem


def number(value: Any, key: str) -> float:
    """``value`` as a finite float, or :class:`MalformedError` naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MalformedError(key, f"is not a number (got {_kind(value)})")
    try:
        out = float(value)
    except OverflowError:  # an integer beyond float range (~1.8e308)
        raise MalformedError(key, "is out of range") from None
    if not math.isfinite(out):
        raise MalformedError(key, "is not a finite number")
    return out


def required(result: dict[str, Any], name: str, key: str = "") -> float:
    """The number ``result[name]`` (``key``: its path, default ``name``); missing is malformed."""
    if name not in result:
        raise MalformedError(key or name, "is missing")
    return number(result[name], key or name)


def optional(result: dict[str, Any], name: str, default: float, key: str = "") -> float:
    """The number ``result[name]``, ``default`` when absent or null (a non-finite figure is written
    as null in fabricsim's JSON)."""
    value = result.get(name)
    return default if value is None else number(value, key or name)


def mapping(value: Any, key: str) -> dict[str, Any]:
    """``value`` as a JSON object ({} when null), or :class:`MalformedError`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedError(key, f"is not an object (got {_kind(value)})")
    return value


def numbers(value: Any, key: str) -> dict[str, float]:
    """An object of numbers (null entries left out), e.g. a time breakdown."""
    return {name: number(v, f"{key}.{name}") for name, v in mapping(value, key).items() if v is not None}


def records(value: Any, key: str) -> list[dict[str, Any]]:
    """A list of JSON objects ([] when null), e.g. a plan's ranked layouts."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedError(key, f"is not a list (got {_kind(value)})")
    for k, item in enumerate(value):
        if not isinstance(item, dict):
            raise MalformedError(f"{key}.{k}", f"is not an object (got {_kind(item)})")
    return value


def _kind(value: Any) -> str:
    names = {bool: "a bool", str: "a string", list: "a list", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)
