"""Tables for ``fabricsim calibrate`` (layer L10): the fitted lines and each row's residual."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table

from fabricsim.units import format_bytes, format_seconds


def calibration_tables(result: dict[str, Any]) -> Group:
    """The fitted lines per run, the tier figures, and measured vs predicted busbw per size."""
    lines = Table(
        title=f"{result['system']}: calibrated from nccl-tests (base {result['base_system']})", title_justify="left"
    )
    for column in ("log", "op", "ranks/nodes", "latency", "bandwidth", "sizes"):
        lines.add_column(column)
    for run in result["runs"]:
        for line in run["lines"]:
            lines.add_row(
                run["log"],
                run["op"],
                f"{run['ranks']}/{run['nodes']}",
                format_seconds(line["latency_s"]),
                f"{line['bandwidth_GBps']:.2f} GB/s",
                f"{format_bytes(line['min_bytes'])} .. {format_bytes(line['max_bytes'])}",
            )
    tiers = Table(title="tier figures", title_justify="left")
    for column in ("field", "base", "calibrated", "note"):
        tiers.add_column(column)
    for tier in result["tiers"]:
        value = "-" if tier["bandwidth_GBps"] is None else f"{tier['bandwidth_GBps']:.2f} GB/s"
        tiers.add_row(tier["field"], f"{tier['base_GBps']:.2f} GB/s", value, tier["note"])
    residuals = Table(title="busbw: measured vs calibrated model", title_justify="left")
    for column in ("op", "size", "measured GB/s", "predicted GB/s", "error"):
        residuals.add_column(column, justify="right")
    for row in result["residuals"]:
        residuals.add_row(
            row["op"],
            format_bytes(row["size_bytes"]),
            f"{row['measured_busbw_GBps']:.2f}",
            f"{row['predicted_busbw_GBps']:.2f}",
            f"{row['error'] * 100:+.1f}%",
        )
    large = result["summary_from_1MiB"]
    footer = (
        f"sizes >= 1 MiB: {large['rows']} rows, median |error| {large['median_abs_error'] * 100:.1f}%, "
        f"max {large['max_abs_error'] * 100:.1f}%"
    )
    return Group(lines, tiers, residuals, footer)
