"""Unit parsing and formatting (layer L0).

Inside fabricsim every quantity is in SI base units: bytes, seconds, FLOP, bytes/s (per direction).
This module converts only at the edges: user strings in, human strings out.
GB = 1e9 bytes, GiB = 2**30 bytes; Gb (bits) = 1e9/8 bytes. Sizes are bytes: a size unit's
prefix is case-insensitive but its final B must be uppercase (``kB``, ``GB``, ``gib``-style bit
spellings ``kb``, ``Gb``, ``Mib`` are refused, so ``400Gb`` is never read as 400 GB).
"""

from __future__ import annotations

import math
import re

from fabricsim.errors import FabricsimError
from fabricsim.limits import show

_BYTE_FACTORS: dict[str, float] = {
    "": 1.0,
    "b": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "pb": 1e15,
    "k": 2.0**10,
    "m": 2.0**20,
    "g": 2.0**30,
    "t": 2.0**40,
    "kib": 2.0**10,
    "mib": 2.0**20,
    "gib": 2.0**30,
    "tib": 2.0**40,
    "pib": 2.0**50,
}

_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KiB = 2.0**10
MiB = 2.0**20
GiB = 2.0**30
TiB = 2.0**40
US = 1e-6
MS = 1e-3
TFLOPS = 1e12


def parse_size(text: str | int | float, field: str = "size") -> int:
    """Parse a byte size such as ``8GiB``, ``512MB``, ``1048576`` or ``1.5e9`` into whole bytes.

    Prefixes are case-insensitive (``kB`` = ``KB``); ``K/M/G/T`` alone mean binary (KiB/MiB/...),
    as nccl-tests does; plain ``b`` is a byte. A unit ending in a lowercase ``b`` after a prefix
    (``kb``, ``Gb``, ``MiB`` spelt ``Mib``) is refused: that is bits by convention (400Gb/s = 50GB).
    Raises :class:`FabricsimError` naming ``field`` for negative, empty, bit-unit or unparsable input.
    """
    if isinstance(text, bool):
        raise FabricsimError(field, f"not a size: {text!r}", "give bytes, e.g. 8GiB or 1048576")
    if isinstance(text, (int, float)):
        big = not isinstance(text, float) and abs(text) >= 2**1000  # float() of it would raise OverflowError
        value, unit = ((math.inf if text > 0 else -math.inf) if big else float(text)), ""
    else:
        match = _SIZE_RE.match(str(text))
        if not match:
            raise FabricsimError(
                field, f"cannot parse size {show(text)}", "use a number with an optional unit, e.g. 8GiB, 512MB"
            )
        value, unit = float(match.group(1)), match.group(2).lower()
        _reject_bits(match.group(2), field)
        if unit not in _BYTE_FACTORS:
            raise FabricsimError(field, f"unknown unit {match.group(2)!r}", "use B, KB, MB, GB, KiB, MiB, GiB, TiB")
        value *= _BYTE_FACTORS[unit]
    if value == math.inf and not (isinstance(text, float) and math.isinf(text)):  # digits past float's range
        raise FabricsimError(field, f"size {show(text)} is too large (over 1.8e308 bytes)", "e.g. 1GiB")
    if not math.isfinite(value) or value < 0:
        raise FabricsimError(field, f"size must be a non-negative number, got {show(text)}", "e.g. 1GiB")
    return round(value)


_DURATION_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(s|ms|us|µs|ns|)\s*$")
_SECOND_FACTORS = {"": 1.0, "s": 1.0, "ms": MS, "us": US, "µs": US, "ns": 1e-9}


def parse_duration(text: str | int | float, field: str = "duration") -> float:
    """Parse a duration such as ``2``, ``2s``, ``150ms`` or ``40us`` into seconds (a bare number is seconds).

    Raises :class:`FabricsimError` naming ``field`` unless the result is finite and positive.
    """
    if isinstance(text, bool):
        raise FabricsimError(field, f"not a duration: {text!r}", "e.g. 2s or 150ms")
    if isinstance(text, (int, float)):
        value = float(text) if isinstance(text, float) or abs(text) < 2**1000 else math.inf
    else:
        match = _DURATION_RE.match(str(text))
        if not match:
            raise FabricsimError(field, f"cannot parse duration {str(text)[:40]!r}", "e.g. 2s, 150ms or 0.1 (seconds)")
        value = float(match.group(1)) * _SECOND_FACTORS[match.group(2)]
    if not math.isfinite(value) or value <= 0:
        raise FabricsimError(field, f"must be a positive, finite duration, got {str(text)[:40]!r}", "e.g. 2s or 150ms")
    return value


def _reject_bits(unit: str, field: str) -> None:
    """Refuse a prefixed unit whose final b is lowercase (bits by convention), e.g. ``Gb``."""
    if len(unit) > 1 and unit.endswith("b") and unit.lower() in _BYTE_FACTORS:
        prefix = unit[:-1].upper().replace("I", "i")
        spelling = f"{prefix}B" if prefix.endswith("i") else f"{prefix}B or {prefix}iB"
        raise FabricsimError(field, f"{unit!r} reads as bits", f"sizes are bytes: use {spelling}; 400Gb/s = 50GB")


def format_bytes(num_bytes: float) -> str:
    """Human binary size, e.g. ``1.50 GiB``."""
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} TiB"  # pragma: no cover - loop always returns


_SI_UNITS = ("B", "kB", "MB", "GB", "TB", "PB")
_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _exact_in(num_bytes: int, base: int, units: tuple[str, ...]) -> str | None:
    """``num_bytes`` in the largest unit of ``units`` (powers of ``base``) not above it, if that
    shows it exactly with at most two decimals (``1.5 MB``); None if it would round."""
    power = 0
    while power + 1 < len(units) and num_bytes >= base ** (power + 1):
        power += 1
    if (num_bytes * 100) % base**power:
        return None
    return f"{num_bytes / base**power:.2f}".rstrip("0").rstrip(".") + f" {units[power]}"


def format_size(num_bytes: float) -> str:
    """A size the user gave, in the unit family it was given in: ``1MB`` -> ``1 MB``, ``64MiB`` ->
    ``64 MiB``, ``1048576`` -> ``1 MiB``. The family is read back from the value: SI (powers of
    1000) when it shows the size exactly, else binary when that does, else SI rounded to two
    decimals (``123.46 kB``)."""
    value = round(float(num_bytes))
    if value != num_bytes or value < 0:
        return format_bytes(num_bytes)
    exact = _exact_in(value, 1000, _SI_UNITS) or _exact_in(value, 1024, _BINARY_UNITS)
    if exact is not None:
        return exact
    power = min(len(_SI_UNITS) - 1, (len(str(value)) - 1) // 3)
    return f"{value / 1000**power:.2f} {_SI_UNITS[power]}"


def format_seconds(seconds: float) -> str:
    """Human duration choosing µs/ms/s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


def format_rate(per_s: float) -> str:
    """A rate (tokens/s, requests/s) as a whole number with thousands separators, or with three
    significant digits below 100 so that a slow configuration does not print as 0."""
    return f"{per_s:,.0f}" if not 0 < abs(per_s) < 100 else f"{per_s:.3g}"


def gbit_to_Bps(gbit_per_s: float) -> float:
    """Line rate in Gb/s to bytes/s."""
    return gbit_per_s * 1e9 / 8.0


def to_GBps(bytes_per_s: float) -> float:
    """bytes/s to GB/s (1 GB = 1e9 B)."""
    return bytes_per_s / 1e9
