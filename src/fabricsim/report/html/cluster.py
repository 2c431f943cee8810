"""The HTML section of a ``fabricsim cluster`` result (layer L10): per job alone vs shared and the
slowdown, and the links' utilisation per switch tier. Values are read through
:mod:`fabricsim.report.html.fields`, so a malformed result names the key."""

from __future__ import annotations

from typing import Any

from fabricsim.report.html.fields import mapping, records, required
from fabricsim.report.html.page import numbers_table
from fabricsim.report.html.svg import bar_chart


def cluster(i: int, result: dict[str, Any]) -> str:
    """Numbers per job, a slowdown bar per job, a mean and a max utilisation bar per tier."""
    rows, slowdowns = [], []
    for k, job in enumerate(records(result.get("jobs"), "jobs")):
        name = str(job.get("name", k))
        for label, key, unit in (("alone", "alone_s", "s"), ("shared", "shared_s", "s"), ("slowdown", "slowdown", "")):
            rows.append((f"{name} {label}", f"{i}.jobs.{k}.{key}", required(job, key, f"jobs.{k}.{key}"), unit))
        slowdowns.append((name, required(job, "slowdown", f"jobs.{k}.slowdown")))
    usage = []
    for tier, load in mapping(result.get("links"), "links").items():
        load = mapping(load, f"links.{tier}")
        usage.append((f"{tier} mean", required(load, "mean_utilization", f"links.{tier}.mean_utilization")))
        usage.append((f"{tier} max", required(load, "max_utilization", f"links.{tier}.max_utilization")))
    parts = [numbers_table(rows), bar_chart("slowdown per job (shared / alone)", slowdowns, "x")]
    if usage:
        parts.append(bar_chart("link utilization per tier (shared run)", usage, ""))
    return "\n".join(parts)
