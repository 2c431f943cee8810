"""Readable tables for ``fabricsim cost`` (layer L10); each takes the result's JSON dict."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table


def _watts(value: float) -> str:
    return f"{value / 1e6:.3f} MW" if value >= 1e6 else f"{value / 1e3:.1f} kW"


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value / 1e6:,.2f}M"


def cost_table(result: dict[str, Any]) -> Group:
    title = (
        f"{result['gpus']} GPUs of {result['system']} · {result['topology']} · {result['optics']} optics · "
        f"{result['cooling']} cooling (PUE {result['pue']:.2f}) · load {result['load']}"
    )
    power = Table(title=title, title_justify="left")
    power.add_column("group", style="bold")
    power.add_column("power", justify="right")
    power.add_column("capex", justify="right")
    capex = result["capex_usd"] or {}
    for group, watts in result["power_W"].items():
        price = "-" if group == "cooling" else _usd(capex.get(group)) if capex else "unknown"
        power.add_row(group, _watts(watts), price)
    bom = result["bom"]
    items = Table(title="bill of materials", title_justify="left", show_header=False)
    items.add_column("item", style="bold")
    items.add_column("count", justify="right")
    for key in ("gpus", "nodes", "nics", "transceivers", "cpo_ports"):
        items.add_row(key, f"{bom[key]:,}")
    for tier, count in bom["switches"].items():
        items.add_row(f"switches {tier} ({bom['switch_model']})", f"{count:,}")
    for cls, line in bom["cables"].items():
        items.add_row(f"cables {cls} ({line['medium']}, {bom['port_gbps']} Gb/s)", f"{line['count']:,}")
    per_byte = ", ".join(f"{k} {v * 1e12:.0f} pJ/B" for k, v in result["energy_J_per_byte"].items())
    notes = f"network: {_watts(result['network_power_W'])}, {_usd(result['network_capex_usd'])}; {per_byte}"
    return Group(power, items, notes)


def rail_only_table(result: dict[str, Any]) -> Table:
    table = Table(
        title=f"rail-only vs rail-optimized, {result['gpus']} GPUs of {result['system']}", title_justify="left"
    )
    table.add_column("figure", style="bold")
    table.add_column("fabricsim", justify="right")
    table.add_column("Wang et al. range", justify="right")
    ranges = result["paper_ranges"]
    cost = result["network_cost_saving"]
    table.add_row("network cost saving", "unknown" if cost is None else f"{cost:.1%}", "38%-77%")
    table.add_row("network power saving", f"{result['network_power_saving']:.1%}", "37%-75%")
    a2a = result["all_to_all"]
    low, high = ranges["all_to_all_slowdown"]
    table.add_row("MoE all-to-all slowdown", f"{a2a['slowdown']:.1%}", f"{low:.1%}-{high:.1%}")
    return table
