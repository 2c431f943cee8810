"""Self-contained HTML reports with plots (layer L10): ``fabricsim report`` and ``--html``.

:func:`render_report` takes result JSON objects (as ``--json`` prints them, or a Chrome trace) and
returns one HTML document that opens offline. Several serve results at different arrival rates
add a latency-throughput curve with its knee.
"""

from __future__ import annotations

from typing import Any

from fabricsim.report.html.kinds import BUILDERS, kind_of
from fabricsim.report.html.page import Section, page, paragraph
from fabricsim.report.html.svg import Series, xy_chart

KNEE_FACTOR = 2.0  # the knee: the last rate whose P99 latency is within 2x the lowest P99


def _heading(kind: str, result: dict[str, Any], name: str) -> str:
    what = " ".join(str(result[k]) for k in ("model", "system", "op", "pattern") if isinstance(result.get(k), str))
    return f"{kind}: {what or name}"


def latency_throughput(results: list[dict[str, Any]]) -> Section | None:
    """Serve results at several rates: P99 end-to-end latency vs output tokens/s, and the knee."""
    runs = sorted(
        (float(r["output_tokens_per_s"]), float(r["e2e_s"]["p99"]), r.get("arrival_rate_per_s"))
        for r in results
        if kind_of(r) == "serve" and "e2e_s" in r
    )
    if len(runs) < 2:
        return None
    lowest = min(latency for _, latency, _ in runs)
    knee = [run for run in runs if run[1] <= KNEE_FACTOR * lowest][-1]
    chart = xy_chart(
        "latency-throughput: P99 end-to-end latency vs output tokens/s",
        [Series("serve runs", tuple((t, lat) for t, lat, _ in runs)), Series("knee", ((knee[0], knee[1]),), "points")],
        ("output tokens/s", "P99 e2e latency (s)"),
    )
    text = (
        f"knee: {knee[0]:.6g} output tokens/s at P99 {knee[1]:.6g} s (arrival rate {knee[2]}/s), the last run "
        f"within {KNEE_FACTOR:g}x the lowest P99"
    )
    return Section("latency-throughput", chart + "\n" + paragraph(text))


def render_report(results: list[dict[str, Any]], names: list[str], title: str = "fabricsim report") -> str:
    """The HTML document for ``results`` (named ``names``, e.g. their files)."""
    sections = []
    for i, (result, name) in enumerate(zip(results, names, strict=True)):
        kind = kind_of(result)
        sections.append(Section(_heading(kind, result, name), BUILDERS[kind](i, result)))
    curve = latency_throughput(results)
    if curve is not None:
        sections.append(curve)
    return page(title, sections, results)
