"""Table for ``fabricsim replay`` (layer L10): step time and communication of a Chakra trace."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table

from fabricsim.units import format_seconds


def replay_table(result: dict[str, Any]) -> Group:
    """A replayed Chakra trace: step time, size, and busy/exposed communication per category."""
    head = Table(title=f"Chakra replay: {result['ranks']} ranks, {result['ops']} ops", title_justify="left")
    head.add_column("field", style="bold")
    head.add_column("value")
    head.add_row("step time", format_seconds(result["step_time_s"]))
    head.add_row("fidelity", str(result["fidelity"]))
    comm = Table(title="communication per category", title_justify="left")
    for column in ("category", "busy", "exposed"):
        comm.add_column(column)
    for category, busy in result["comm_busy_s"].items():
        comm.add_row(category, format_seconds(busy), format_seconds(result["exposed_comm_s"].get(category, 0.0)))
    return Group(head, comm, *result.get("notes", []))
