"""The ``network`` block of ``train``/``infer`` at flow or packet fidelity as table rows (layer L10)."""

from __future__ import annotations

from typing import Any

from fabricsim.units import format_seconds, format_size


def network_rows(network: dict[str, Any]) -> list[tuple[str, str]]:
    """A few lines: the fabric and its choices, each parallel dimension's highest tier and bytes off
    the scale-up domain, the exposed time per collective, and the packet counters when present."""
    fabric = f"{network['topology']} ({network['fidelity']}, {network['transport']}, {network['routing']})"
    placement = network["placement"]
    if network["background"]:
        placement += f", background {network['background']}"
    rows = [("fabric", fabric), ("placement", placement)]
    for dim, entry in network["dimensions"].items():
        beyond = sum(v for k, v in entry["bytes_by_tier"].items() if k != "scale-up")
        rows.append((f"{dim} groups", f"up to {entry['highest_tier']}; {format_size(beyond)} per step beyond NVLink"))
    exposed = ", ".join(f"{k} {format_seconds(v)}" for k, v in network["exposed_s"].items() if v > 0)
    rows.append(("exposed on the fabric", exposed or "none"))
    if "pause_s" in network:
        paused = f"{format_seconds(network['pause_s'])} paused ({network['pause_frames']} frames)"
        marked = f"{network['ecn_marked_fraction']:.2%} ECN-marked"
        rows.append(("PFC / ECN / drops", f"{paused}, {marked}, {network['drops']} drops"))
        if network.get("retransmitted_bytes") or network.get("trimmed_packets"):
            resent = f"{format_size(network['retransmitted_bytes'])} resent, {network['trimmed_packets']:,} trimmed"
            rows.append(("loss recovery", resent))
    runs = f"{network['mixes_timed']} ({network['network_runs']} network runs, {network['rounds']} rounds)"
    rows.append(("mixes timed", runs))
    return rows
