"""The readable table of ``fabricsim goodput`` (layer L10). Takes the result's JSON dict."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table

from fabricsim.report.tables import key_value_table
from fabricsim.units import format_bytes, format_seconds


def _spread(values: dict[str, float], digits: int) -> str:
    return f"{values['mean']:.{digits}f} (p10 {values['p10']:.{digits}f}, p90 {values['p90']:.{digits}f})"


def goodput_table(result: dict[str, Any]) -> Group:
    counts = result["components"]
    summary = key_value_table(
        f"{result['model']} on {result['gpus']} GPUs of {result['system']}, {result['days']:g} days"
        f" ({result['runs']} runs, seed {result['seed']})",
        [
            ("components", ", ".join(f"{k} {v}" for k, v in counts.items())),
            (
                "failure rates",
                f"{result['failure_rates']} ({result.get('failure_rates_basis', 'given')}); "
                f"job MTTF {format_seconds(result['mttf_s'])}",
            ),
            ("interruptions", _spread(result["interruptions"], 1)),
            ("rerouted cable failures", f"{result['rerouted_link_failures']:.1f} ({result['link_failures']})"),
            ("checkpoint", f"{format_bytes(result['checkpoint_bytes'])} to {result['checkpoint_target']}"),
            (
                "  blocking / overlapped",
                f"{format_seconds(result['checkpoint_time_s'])} / {format_seconds(result['checkpoint_overlapped_s'])}",
            ),
            ("  interval", format_seconds(result["checkpoint_interval_s"])),
            ("restart", format_seconds(result["restart_time_s"])),
            ("ETTR", f"{_spread(result['ettr'], 4)}; expected {result['ettr_expected']:.4f}"),
            ("goodput", f"{result['goodput_tokens_per_s']:,.0f} tokens/s of {result['tokens_per_s']:,.0f}"),
            ("lost GPU-hours", f"{result['lost_gpu_hours']:,.0f}"),
        ],
    )
    causes = Table(title="interruptions by cause (mean per run)", title_justify="left")
    causes.add_column("cause", style="bold")
    causes.add_column("count", justify="right")
    for name, count in sorted(result["interruptions_by_cause"].items(), key=lambda item: -item[1]):
        causes.add_row(name, f"{count:.1f}")
    if "ocs" not in result:
        return Group(summary, causes)
    return Group(summary, causes, _ocs_table(result["ocs"]))


def _ocs_table(ocs: dict[str, Any]) -> Table:
    """A failed cube with and without optical circuit switching (TPU pods; the ``ocs`` block)."""
    table = Table(title=f"a failed {ocs['cube_chips']}-chip cube ({ocs['cube_failures_per_day']:.3g}/day, available "
                  f"{ocs['cube_availability']:.4f}); slice of {ocs['cubes']} of {ocs['pool_cubes']} cubes",
                  title_justify="left")  # fmt: skip
    for column in ("", "blast radius (chips)", "resume after", "slice availability"):
        table.add_column(column, justify="right" if column else "left")
    for key, label in (("ocs", "with OCS"), ("static", "statically wired")):
        table.add_row(label, f"{ocs['blast_radius_chips'][key]:,}",
                      format_seconds(ocs["resume_after_cube_failure_s"][key]),
                      f"{ocs['slice_availability'][key]:.4f}")  # fmt: skip
    return table
