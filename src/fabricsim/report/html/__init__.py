"""Self-contained HTML reports with plots (layer L10): ``fabricsim report`` and ``--html``.

:func:`render_report` takes result JSON objects (as ``--json`` prints them, or a Chrome trace) and
returns one HTML document that opens offline. Several serve results at different arrival rates
add a latency-throughput curve with its knee. A value a chart needs that is missing or of the
wrong type is one error naming the file and the key; the page is refused when it would be larger
than the ``REPORT_BYTES`` cap (:mod:`fabricsim.limits`).
"""

from __future__ import annotations

from typing import Any

from fabricsim.errors import FabricsimError
from fabricsim.limits import cap, cap_hint
from fabricsim.report.html.fields import MalformedError, mapping, number, required
from fabricsim.report.html.kinds import BUILDERS, kind_of
from fabricsim.report.html.page import Section, embedded_json, page, paragraph
from fabricsim.report.html.svg import Series, xy_chart

KNEE_FACTOR = 2.0  # the knee: the last rate whose P99 latency is within 2x the lowest P99
REPORT_CAP = "REPORT_BYTES"


def _heading(kind: str, result: dict[str, Any], name: str) -> str:
    what = " ".join(str(result[k]) for k in ("model", "system", "op", "pattern") if isinstance(result.get(k), str))
    return f"{kind}: {what or name}"


def _serve_run(result: dict[str, Any]) -> tuple[float, float, Any] | None:
    """(output tokens/s, P99 e2e latency s, arrival rate) of a serve result; None without a P99
    (no request finished: fabricsim writes null)."""
    p99 = mapping(result.get("e2e_s"), "e2e_s").get("p99")
    if p99 is None:
        return None
    rate = result.get("arrival_rate_per_s")
    if rate is not None:
        number(rate, "arrival_rate_per_s")
    return required(result, "output_tokens_per_s"), number(p99, "e2e_s.p99"), rate


def _malformed(name: str, kind: str, exc: MalformedError) -> FabricsimError:
    return FabricsimError("result", f"{name}: {exc}", f"a {kind} result needs it as fabricsim's --json writes it")


def latency_throughput(results: list[dict[str, Any]], names: list[str]) -> Section | None:
    """Serve results at several rates: P99 end-to-end latency vs output tokens/s, and the knee."""
    found = []
    for result, name in zip(results, names, strict=True):
        try:
            run = _serve_run(result) if kind_of(result) == "serve" and "e2e_s" in result else None
        except MalformedError as exc:
            raise _malformed(name, "serve", exc) from None
        if run is not None:
            found.append(run)
    runs = sorted(found, key=lambda run: (run[0], run[1], run[2] is not None, run[2] or 0.0))
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


def _too_large(field: str, limit: int) -> FabricsimError:
    return FabricsimError(field, f"the report would be larger than the cap {limit} bytes", cap_hint(REPORT_CAP))


def render_report(
    results: list[dict[str, Any]], names: list[str], title: str = "fabricsim report", field: str = "out"
) -> str:
    """The HTML document for ``results`` (named ``names``, e.g. their files); ``field`` is the
    option that names the output, for the error when the page would exceed the cap. Sections are
    counted as they are drawn, after the embedded results, so an oversized report stops early.
    O(size of the results)."""
    limit, embedded, sections = cap(REPORT_CAP), embedded_json(results), []
    size = len(embedded)
    if size > limit:
        raise _too_large(field, limit)
    for i, (result, name) in enumerate(zip(results, names, strict=True)):
        kind = kind_of(result)
        try:
            section = Section(_heading(kind, result, name), BUILDERS[kind](i, result))
        except MalformedError as exc:
            raise _malformed(name, kind, exc) from None
        size += len(section.html)  # characters: a lower bound on the UTF-8 bytes
        if size > limit:
            raise _too_large(field, limit)
        sections.append(section)
    curve = latency_throughput(results, names)
    if curve is not None:
        sections.append(curve)
    document = page(title, sections, embedded)
    if len(document.encode("utf-8")) > limit:
        raise _too_large(field, limit)
    return document
