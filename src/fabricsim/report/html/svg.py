"""Hand-written SVG charts for the HTML report (layer L10): bars, x-y lines/points, timelines.

Pure functions from data to SVG text, so a report is byte-identical for identical results and
opens anywhere without a plotting library (see docs/design.md, "HTML reports"). Every chart is an
``<svg class="plot">``; every data mark (bar, point, line, span) has ``class="mark"`` and a
``data-label`` / ``data-value`` pair plus a ``<title>`` for hovering, which the browser test uses.
All text goes through :func:`html.escape`. Coordinates are printed with two decimals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 30, 45
# magnitudes an x-y axis draws: beyond them the axis arithmetic (hi - lo, 10**k) overflows float64
# (largest ~1.8e308, smallest normal ~2.2e-308); such points are left out like NaN
PLOTTABLE = 1e300
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d", "#bab0ac")


@dataclass(frozen=True, slots=True)
class Series:
    """One x-y series: ``points`` (x, y); ``style`` 'line', 'points' or 'step' (a CDF)."""

    name: str
    points: tuple[tuple[float, float], ...]
    style: str = "line"


def _f(value: float) -> str:
    return f"{value:.2f}"


def short_number(value: float) -> str:
    """4 significant digits with an SI suffix for large and small magnitudes (axis labels)."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= scale:
            return f"{value / scale:.4g}{suffix}"
    for scale, suffix in ((1e-6, "µ"), (1e-3, "m")):
        if magnitude < scale * 1e3:
            return f"{value / scale:.4g}{suffix}"
    return f"{value:.4g}"


def _svg(title: str, body: list[str], height: int = HEIGHT) -> str:
    head = (
        f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}">'
    )
    caption = f'<text x="{LEFT}" y="18" class="title">{escape(title)}</text>'
    return "\n".join([head, caption, *body, "</svg>"])


def _mark_title(label: str, value: str) -> str:
    return f"<title>{escape(label)}: {escape(value)}</title>"


def bar_chart(title: str, items: list[tuple[str, float]], unit: str) -> str:
    """Horizontal bars, one per (label, value >= 0), scaled to the largest value."""
    rows = [(label, float(value)) for label, value in items if math.isfinite(float(value))]
    height = TOP + 22 * max(1, len(rows)) + 20
    left = 190
    span = max([v for _, v in rows] + [0.0]) or 1.0
    body = []
    for i, (label, value) in enumerate(rows):
        y = TOP + 22 * i
        width = max(0.0, value) / span * (WIDTH - left - 90)
        color = PALETTE[i % len(PALETTE)]
        text = f"{short_number(value)} {unit}".strip()
        body.append(f'<text x="{left - 6}" y="{_f(y + 14)}" text-anchor="end">{escape(label)}</text>')
        body.append(
            f'<rect class="mark" x="{left}" y="{_f(y + 3)}" width="{_f(max(width, 1.0))}" height="16" '
            f'fill="{color}" data-label="{escape(label)}" data-value="{value!r}">'
            f"{_mark_title(label, text)}</rect>"
        )
        body.append(f'<text x="{_f(left + width + 4)}" y="{_f(y + 14)}">{escape(text)}</text>')
    return _svg(title, body, height)


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        return [10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    step = 10 ** math.floor(math.log10((hi - lo) / 4 or 1.0))
    for factor in (1, 2, 5, 10):
        if (hi - lo) / (step * factor) <= 6:
            step *= factor
            break
    first = math.floor(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step) + 2)]


@dataclass(frozen=True, slots=True)
class _Axis:
    lo: float
    hi: float
    log: bool
    pixels: tuple[float, float]

    def __call__(self, value: float) -> float:
        a, b = (math.log10(self.lo), math.log10(self.hi)) if self.log else (self.lo, self.hi)
        v = math.log10(value) if self.log else value
        frac = (v - a) / (b - a) if b > a else 0.5
        return self.pixels[0] + frac * (self.pixels[1] - self.pixels[0])


def _axis(values: list[float], log: bool, pixels: tuple[float, float], zero: bool) -> _Axis:
    usable = [v for v in values if _in_range(v, log)]
    lo, hi = (min(usable), max(usable)) if usable else (0.0, 1.0)
    if log:
        lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        hi = hi if hi > lo else lo * 10
    else:
        lo = min(lo, 0.0) if zero else lo
        hi = hi if hi - lo >= 1 / PLOTTABLE else lo + 1.0  # a span under 1e-300 would underflow the tick step
        ticks = _ticks(lo, hi, False)
        lo, hi = min(lo, ticks[0]), ticks[-1] if ticks[-1] >= hi else hi
    return _Axis(lo, hi, log, pixels)


def _grid(x: _Axis, y: _Axis, labels: tuple[str, str]) -> list[str]:
    out = []
    for tick in _ticks(x.lo, x.hi, x.log):
        if x.lo <= tick <= x.hi:
            px = x(tick)
            out.append(f'<line class="grid" x1="{_f(px)}" x2="{_f(px)}" y1="{TOP}" y2="{HEIGHT - BOTTOM}"/>')
            out.append(
                f'<text x="{_f(px)}" y="{HEIGHT - BOTTOM + 14}" text-anchor="middle">{short_number(tick)}</text>'
            )
    for tick in _ticks(y.lo, y.hi, y.log):
        if y.lo <= tick <= y.hi:
            py = y(tick)
            out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_f(py)}" y2="{_f(py)}"/>')
            out.append(f'<text x="{LEFT - 4}" y="{_f(py + 4)}" text-anchor="end">{short_number(tick)}</text>')
    out.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) // 2}" y="{HEIGHT - 8}" text-anchor="middle">{escape(labels[0])}</text>'
    )
    out.append(
        f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) // 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) // 2})">{escape(labels[1])}</text>'
    )
    return out


def xy_chart(
    title: str,
    series: list[Series],
    labels: tuple[str, str],
    log: tuple[bool, bool] = (False, False),
    diagonal: bool = False,
) -> str:
    """Lines, points or CDF steps of several series on shared axes; ``diagonal`` draws y = x
    (predicted vs measured). ``labels`` are the (x, y) axis titles; ``log`` the axis scales."""
    xs = [p[0] for s in series for p in s.points]
    ys = [p[1] for s in series for p in s.points]
    if diagonal:
        xs = ys = xs + ys
    x = _axis(xs, log[0], (LEFT, WIDTH - RIGHT), zero=False)
    y = _axis(ys, log[1], (HEIGHT - BOTTOM, TOP), zero=not log[1])
    body = _grid(x, y, labels)
    if diagonal:
        lo, hi = max(x.lo, y.lo), min(x.hi, y.hi)
        body.append(f'<line class="ref" x1="{_f(x(lo))}" y1="{_f(y(lo))}" x2="{_f(x(hi))}" y2="{_f(y(hi))}"/>')
    for k, s in enumerate(series):
        body.extend(_series(s, x, y, PALETTE[k % len(PALETTE)]))
        body.append(
            f'<text x="{WIDTH - RIGHT - 4}" y="{TOP + 14 * k + 10}" text-anchor="end" '
            f'fill="{PALETTE[k % len(PALETTE)]}">{escape(s.name)}</text>'
        )
    return _svg(title, body)


def _series(series: Series, x: _Axis, y: _Axis, color: str) -> list[str]:
    points = [(px, py) for px, py in series.points if _plottable(px, x) and _plottable(py, y)]
    out = []
    if series.style in ("line", "step") and len(points) > 1:
        path = []
        for i, (px, py) in enumerate(points):
            if series.style == "step" and i:
                path.append(f"L{_f(x(px))},{_f(y(points[i - 1][1]))}")
            path.append(f"{'M' if i == 0 else 'L'}{_f(x(px))},{_f(y(py))}")
        out.append(
            f'<path class="mark" d="{" ".join(path)}" fill="none" stroke="{color}" stroke-width="2" '
            f'data-label="{escape(series.name)}" data-value="{len(points)}"/>'
        )
    if series.style != "step":
        for px, py in points:
            label = f"{series.name} ({short_number(px)}, {short_number(py)})"
            out.append(
                f'<circle class="mark" cx="{_f(x(px))}" cy="{_f(y(py))}" r="3.5" fill="{color}" '
                f'data-label="{escape(label)}" data-value="{py!r}">{_mark_title(label, short_number(py))}</circle>'
            )
    return out


def _in_range(value: float, log: bool) -> bool:
    return abs(value) <= PLOTTABLE and (value >= 1 / PLOTTABLE if log else True)


def _plottable(value: float, axis: _Axis) -> bool:
    return _in_range(value, axis.log)


def timeline_chart(title: str, lanes: list[tuple[str, list[tuple[float, float, str]]]]) -> str:
    """A Gantt chart: one row per lane, one rectangle per (start_s, duration_s, name)."""
    end = max([s + d for _, spans in lanes for s, d, _ in spans] + [1e-9])
    left = 170
    height = TOP + 18 * max(1, len(lanes)) + 40
    body = [f'<text x="{left}" y="{height - 8}">0 .. {escape(short_number(end))}s</text>']
    names = sorted({name.split(" ")[0] for _, spans in lanes for _, _, name in spans})
    colors = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}
    scale = (WIDTH - left - RIGHT) / end
    for row, (lane, spans) in enumerate(lanes):
        y = TOP + 18 * row
        body.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{escape(lane)}</text>')
        for start, duration, name in spans:
            label = f"{name} @ {short_number(start)}s for {short_number(duration)}s"
            body.append(
                f'<rect class="mark" x="{_f(left + start * scale)}" y="{y + 2}" '
                f'width="{_f(max(duration * scale, 0.5))}" height="14" fill="{colors[name.split(" ")[0]]}" '
                f'data-label="{escape(name)}" data-value="{duration!r}">{_mark_title(label, "")}</rect>'
            )
    return _svg(title, body, height)
