"""Headless Chromium for report tests (Playwright driving the system's Chromium; never downloads one).

``FABRICSIM_CHROMIUM`` overrides the executable (default /usr/bin/chromium, as Debian's
``apt-get install chromium`` puts it). Tests skip with the reason when either part is missing; when
both are there, a browser that does not start is a test failure (a broken install or a blocked
sandbox would otherwise pass CI unseen).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    candidate = os.environ.get("FABRICSIM_CHROMIUM", "/usr/bin/chromium")
    return candidate if Path(candidate).is_file() else shutil.which("chromium")


def launch(playwright):
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium not installed (Debian: apt-get install -y chromium; or set FABRICSIM_CHROMIUM)")
    try:
        return playwright.chromium.launch(executable_path=path, args=ARGS)
    except Exception as exc:  # playwright and Chromium are both installed: not starting is a failure
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        pytest.fail(f"Chromium at {path} did not start: {first} (fix the install or set FABRICSIM_CHROMIUM)")


def open_offline(browser, html_path: Path) -> dict:
    """Load ``html_path`` with the network off; return console errors, page errors, requests,
    the plots (marks and their total drawn area) and every number cell."""
    context = browser.new_context(offline=True)
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(html_path.resolve().as_uri())
    plots = page.evaluate("""() => Array.from(document.querySelectorAll('svg.plot')).map(svg => {
        const marks = Array.from(svg.querySelectorAll('.mark'));
        const drawn = marks.filter(m => { const b = m.getBBox(); return b.width > 0 || b.height > 0; });
        return {title: svg.getAttribute('aria-label'), marks: marks.length, drawn: drawn.length};
    })""")
    cells = page.evaluate("""() => Array.from(document.querySelectorAll('[data-key]')).map(td =>
        ({key: td.getAttribute('data-key'), value: td.getAttribute('data-value'), text: td.textContent}))""")
    plot_count = page.evaluate("document.body.getAttribute('data-plots')")
    context.close()
    return {"errors": errors, "requests": requests, "plots": plots, "cells": cells, "plot_count": plot_count}
