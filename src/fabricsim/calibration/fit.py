"""Fit measured collective times to a few alpha-beta lines, NCCL-style (layer L8).

NCCL picks, per size, the fastest (algorithm, protocol) of its cost table, each option a line
``time = latency + S / bandwidth`` (tuning.cc; reference collective-cost-models.md 1.7). A sweep of
nccl-tests therefore shows a lower envelope of a few lines, with a regime change where the tuner
switches. :func:`fit_lines` recovers that envelope: the sizes are split into K contiguous regimes,
each fitted by least squares on relative error (so 8 B and 8 GiB rows weigh alike), and the
prediction is the minimum over the K lines, exactly how the collective model uses them. K (1..4) is
chosen by Akaike's criterion (n ln(SSE/n) + 4K: two parameters a line), so a regime is added only
when it pays for itself. Exhaustive over split points: O(C(n, K-1) n K), ~0.1 s for 31 rows.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from fabricsim.errors import FabricsimError
from fabricsim.specs import FitLine

MAX_LINES = 4
MIN_ROWS_PER_LINE = 2
RESOLUTION = 1e-4  # relative: nccl-tests prints 4-5 significant digits, so smaller residuals are rounding
MIN_S_PER_BYTE = 1e-15  # 1 PB/s: a floor so a flat (latency-bound) regime still has a finite bandwidth


@dataclass(frozen=True, slots=True)
class FitResult:
    """The fitted lines (fastest-of) and the relative error of each row: (predicted - measured) / measured."""

    lines: tuple[FitLine, ...]
    relative_errors: tuple[float, ...]


def _line(sizes: np.ndarray, times: np.ndarray) -> tuple[float, float]:
    """(latency_s, s_per_byte) minimising sum(((latency + s_per_byte S) - t) / t)^2, both >= 0."""
    a, b = 1.0 / times, sizes / times
    saa, sab, sbb, sa, sb = a @ a, a @ b, b @ b, a.sum(), b.sum()
    det = saa * sbb - sab * sab
    if det > 0.0:
        alpha, beta = (sa * sbb - sb * sab) / det, (sb * saa - sa * sab) / det
        if alpha >= 0.0 and beta >= MIN_S_PER_BYTE:
            return float(alpha), float(beta)
    beta_only = sb / sbb  # latency 0
    alpha_only = (sa - MIN_S_PER_BYTE * sab) / saa  # bandwidth at the floor
    err_beta = float(np.sum((beta_only * b - 1.0) ** 2))
    err_alpha = float(np.sum((max(alpha_only, 0.0) * a + MIN_S_PER_BYTE * b - 1.0) ** 2))
    if err_beta <= err_alpha:
        return 0.0, max(float(beta_only), MIN_S_PER_BYTE)
    return max(float(alpha_only), 0.0), MIN_S_PER_BYTE


def _envelope(lines: list[tuple[float, float]], sizes: np.ndarray) -> np.ndarray:
    return np.min([alpha + beta * sizes for alpha, beta in lines], axis=0)


def _best_split(sizes: np.ndarray, times: np.ndarray, k: int) -> tuple[float, tuple[int, ...]]:
    """(SSE of relative error, split points) of the best partition into ``k`` regimes."""
    n = len(sizes)
    cache: dict[tuple[int, int], tuple[float, float]] = {}
    best_sse, best_cuts = math.inf, ()
    for cuts in itertools.combinations(range(MIN_ROWS_PER_LINE, n - MIN_ROWS_PER_LINE + 1), k - 1):
        bounds = (0, *cuts, n)
        if any(hi - lo < MIN_ROWS_PER_LINE for lo, hi in itertools.pairwise(bounds)):
            continue
        lines = []
        for lo, hi in itertools.pairwise(bounds):
            if (lo, hi) not in cache:
                cache[(lo, hi)] = _line(sizes[lo:hi], times[lo:hi])
            lines.append(cache[(lo, hi)])
        sse = float(np.sum((_envelope(lines, sizes) / times - 1.0) ** 2))
        if sse < best_sse:
            best_sse, best_cuts = sse, cuts
    return best_sse, best_cuts


def fit_lines(sizes_bytes: list[int], times_s: list[float]) -> FitResult:
    """Fit measured (size, time) rows, sizes ascending, to 1..4 lines; see the module docstring."""
    if len(sizes_bytes) != len(times_s) or len(sizes_bytes) < MIN_ROWS_PER_LINE:
        raise FabricsimError(
            "log",
            f"needs at least {MIN_ROWS_PER_LINE} sizes to fit, got {len(sizes_bytes)}",
            "run nccl-tests over a range of sizes (-b 8 -e 8G -f 2)",
        )
    sizes, times = np.asarray(sizes_bytes, dtype=float), np.asarray(times_s, dtype=float)
    n = len(sizes)
    best = (math.inf, 1, ())
    for k in range(1, min(MAX_LINES, n // MIN_ROWS_PER_LINE) + 1):
        sse, cuts = _best_split(sizes, times, k)
        aic = n * math.log(max(sse / n, RESOLUTION**2)) + 4 * k
        if aic < best[0]:
            best = (aic, k, cuts)
    bounds = (0, *best[2], n)
    lines = []
    for lo, hi in itertools.pairwise(bounds):
        alpha, beta = _line(sizes[lo:hi], times[lo:hi])
        lines.append(
            FitLine(latency_s=alpha, bandwidth_Bps=1.0 / beta, min_bytes=int(sizes[lo]), max_bytes=int(sizes[hi - 1]))
        )
    predicted = np.array([predict_s(lines, s) for s in sizes])
    return FitResult(tuple(lines), tuple(float(e) for e in predicted / times - 1.0))


def predict_s(lines: tuple[FitLine, ...] | list[FitLine], size_bytes: float) -> float:
    """Time of ``size_bytes`` on fitted lines: the fastest line, as the collective model takes it."""
    return min(line.time_s(size_bytes) for line in lines)
