"""Table for ``fabricsim cluster`` (layer L10): each job alone vs shared, and the links by tier."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table

from fabricsim.units import format_bytes, format_seconds

TIMES = "time: a train job's step, an infer job's decode step (TPOT), a traffic tenant's finish"
"""What a job's alone/shared time is, by kind (DESIGN.md: cluster ``jobs[]``)."""


def cluster_table(result: dict[str, Any]) -> Group:
    """The jobs (time alone, shared, slowdown) and the load of each switch tier in the shared run."""
    title = f"{len(result['jobs'])} jobs on {result['fabric']} · {result['routing']} · {result['fidelity']}"
    if result.get("background"):
        title += f" · background {result['background']}"
    jobs = Table(title=title, title_justify="left", caption=TIMES, caption_justify="left")
    for column in ("job", "kind", "GPUs", "placement", "alone", "shared", "slowdown"):
        right = column in ("GPUs", "alone", "shared", "slowdown")
        jobs.add_column(column, justify="right" if right else "left", no_wrap=column == "job")
    for job in result["jobs"]:
        jobs.add_row(job["name"], job["kind"], str(job["gpus"]), job["placement"], format_seconds(job["alone_s"]),
                     format_seconds(job["shared_s"]), f"{job['slowdown']:.3f}x")
    links = Table(title="links by tier (shared run)", title_justify="left")
    for column in ("tier", "mean utilization", "max utilization", "bytes"):
        links.add_column(column, justify="left" if column == "tier" else "right")
    for tier, load in result["links"].items():
        links.add_row(tier, f"{load['mean_utilization']:.1%}", f"{load['max_utilization']:.1%}",
                      format_bytes(load["bytes"]))
    return Group(jobs, links)
