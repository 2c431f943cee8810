"""The HTML page around the charts (layer L10): escaped text, key-number tables, inline CSS/JS.

The page needs no network: styles and the small script are inline, charts are inline SVG, and the
result itself is embedded as JSON (``<script type="application/json" id="fabricsim-results">``,
with ``<`` written as ``\\u003c`` so no value can close the tag). Every number shown in a table
carries ``data-key`` (its path in the result JSON) and ``data-value`` (the JSON value, full
precision); the text shows it to 6 significant digits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from typing import Any

from fabricsim.limits import show

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table.numbers{border-collapse:collapse;margin:8px 0}table.numbers td{padding:2px 10px;border-bottom:1px solid #eee}
td.num{text-align:right;font-variant-numeric:tabular-nums}
svg.plot{display:block;margin:12px 0;background:#fff;font-size:11px}
svg.plot text.title{font-size:13px;font-weight:600}
svg.plot line.grid{stroke:#e5e5e5}svg.plot line.ref{stroke:#888;stroke-dasharray:4 3}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:3px 6px;border-radius:3px;
font-size:12px;display:none}
p.note{color:#555}
"""

_JS = """
(function () {
  var tip = document.getElementById('tip');
  document.querySelectorAll('svg.plot .mark').forEach(function (mark) {
    mark.addEventListener('mousemove', function (event) {
      tip.textContent = mark.getAttribute('data-label') + ' = ' + mark.getAttribute('data-value');
      tip.style.left = (event.clientX + 12) + 'px';
      tip.style.top = (event.clientY + 12) + 'px';
      tip.style.display = 'block';
    });
    mark.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  });
  document.body.setAttribute('data-plots', String(document.querySelectorAll('svg.plot').length));
})();
"""


@dataclass(frozen=True, slots=True)
class Section:
    """One result's part of the page: a heading and its HTML (tables and charts)."""

    heading: str
    html: str


def number_text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return escape(str(value))
    try:
        return f"{value:.6g}"
    except OverflowError:  # an integer beyond float range
        return show(value)


def numbers_table(rows: list[tuple[str, str, Any, str]]) -> str:
    """A two-column table of (label, JSON key path, value, unit) rows."""
    out = ['<table class="numbers">']
    for label, key, value, unit in rows:
        if value is None:
            continue
        data = json.dumps(value) if not isinstance(value, str) else value
        out.append(
            f'<tr><td>{escape(label)}</td><td class="num" data-key="{escape(key)}" '
            f'data-value="{escape(data)}">{number_text(value)}</td><td>{escape(unit)}</td></tr>'
        )
    out.append("</table>")
    return "\n".join(out)


def paragraph(text: str) -> str:
    return f'<p class="note">{escape(text)}</p>'


def embedded_json(results: list[Any]) -> str:
    """The results as the page embeds them: JSON with ``<`` and ``>`` escaped."""
    return json.dumps(results, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e")


def page(title: str, sections: list[Section], embedded: str) -> str:
    """The whole self-contained HTML document; ``embedded`` is :func:`embedded_json` of the results."""
    body = [f"<h2>{escape(s.heading)}</h2>\n{s.html}" for s in sections]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">",
            f"<title>{escape(title)}</title>",
            f"<style>{_CSS}</style></head><body>",
            f"<h1>{escape(title)}</h1>",
            *body,
            '<div id="tip"></div>',
            f'<script type="application/json" id="fabricsim-results">{embedded}</script>',
            f"<script>{_JS}</script>",
            "</body></html>",
            "",
        ]
    )
