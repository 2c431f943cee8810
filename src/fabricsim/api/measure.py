"""Measure collectives on this machine (public API, layer L9): validated spec in, rows out."""

from __future__ import annotations

from collections.abc import Sequence

from fabricsim.collectives import parse_op
from fabricsim.errors import FabricsimError
from fabricsim.measure import MeasureResult, MeasureSpec
from fabricsim.measure.torch_dist import measure_collective
from fabricsim.units import parse_size

MAX_SIZES = 64


def size_sweep(min_size: str | int, max_size: str | int, factor: int = 2) -> list[int]:
    """nccl-tests' ``-b MIN -e MAX -f FACTOR`` sweep, in bytes."""
    low, high = parse_size(min_size, "min-bytes"), parse_size(max_size, "max-bytes")
    if factor < 2:
        raise FabricsimError("step_factor", f"must be >= 2, got {factor}")
    if low <= 0 or high < low:
        field = "min-bytes" if low <= 0 or high > 0 else "max-bytes"  # name the one that is wrong on its own
        raise FabricsimError(field, f"need 0 < min <= max, got {low} and {high}", "e.g. -b 1KiB -e 16MiB")
    sizes = [low]
    while sizes[-1] * factor <= high and len(sizes) < MAX_SIZES:
        sizes.append(sizes[-1] * factor)
    return sizes


def measure(
    op: str, *, backend: str, ranks: int, sizes: Sequence[str | int], iters: int = 20, warmup: int = 5
) -> MeasureResult:
    """Time ``op`` with torch.distributed on ``ranks`` local processes over ``sizes`` (nccl-tests' S)."""
    if len(sizes) > MAX_SIZES:
        raise FabricsimError("sizes", f"at most {MAX_SIZES} sizes, got {len(sizes)}")
    parsed = tuple(parse_size(size, "sizes") for size in sizes)
    spec = MeasureSpec(parse_op(op).value, backend.strip().lower(), ranks, parsed, iters, warmup)
    return measure_collective(spec)
