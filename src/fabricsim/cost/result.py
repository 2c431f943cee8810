"""The ``fabricsim cost`` result and the rail-only comparison (layer L8): the JSON contract."""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.cost.bom import Bom
from fabricsim.cost.power import PowerBreakdown
from fabricsim.cost.prices import Capex


@dataclass(frozen=True, slots=True)
class CostResult:
    """Power (W, at ``load``), bill of materials and capex (USD, when every price is known) of
    ``gpus`` GPUs of ``system`` with the scale-out ``topology``; ``energy_J_per_byte`` per cable
    class; ``optics_W_per_port`` at the fabric's port speed (switch end)."""

    system: str
    gpus: int
    topology: str
    optics: str
    cooling: str
    power: PowerBreakdown
    bom: Bom
    capex: Capex
    energy_J_per_byte: tuple[tuple[str, float], ...]
    optics_W_per_port: float

    def to_json(self) -> dict[str, object]:
        return {
            "system": self.system,
            "gpus": self.gpus,
            "topology": self.topology,
            "optics": self.optics,
            "cooling": self.cooling,
            "load": self.power.load.value,
            "pue": self.power.pue,
            "power_W": self.power.to_json(),
            "network_power_W": self.power.network_W,
            "bom": self.bom.to_json(),
            "capex_usd": self.capex.to_json(),
            "network_capex_usd": None if self.capex.missing else self.capex.network,
            "prices_missing": list(self.capex.missing),
            "optics_W_per_port": self.optics_W_per_port,
            "energy_J_per_byte": dict(self.energy_J_per_byte),
        }


@dataclass(frozen=True, slots=True)
class RailOnlyComparison:
    """Rail-only vs rail-optimized for the same GPUs: network power and capex saved (fractions),
    and an MoE all-to-all's completion on each (flow model), next to Wang et al.'s ranges."""

    baseline: CostResult
    rail_only: CostResult
    all_to_all_s: float
    all_to_all_rail_only_s: float
    forward_s: float
    size_bytes: int

    def to_json(self) -> dict[str, object]:
        b, r = self.baseline, self.rail_only
        cost_saved = None if b.capex.missing or r.capex.missing else 1.0 - r.capex.network / b.capex.network
        return {
            "system": b.system,
            "gpus": b.gpus,
            "network_power_W": {"rail-optimized": b.power.network_W, "rail-only": r.power.network_W},
            "network_power_saving": 1.0 - r.power.network_W / b.power.network_W,
            "network_capex_usd": {
                "rail-optimized": None if b.capex.missing else b.capex.network,
                "rail-only": None if r.capex.missing else r.capex.network,
            },
            "network_cost_saving": cost_saved,
            "switches": {"rail-optimized": b.bom.switches, "rail-only": r.bom.switches},
            "paper_ranges": {
                "cost_saving": [0.38, 0.77],
                "power_saving": [0.37, 0.75],
                "all_to_all_slowdown": [0.082, 0.112],
            },
            "all_to_all": {
                "size_bytes": self.size_bytes,
                "rail_optimized_s": self.all_to_all_s,
                "rail_only_s": self.all_to_all_rail_only_s,
                "nvlink_forward_s": self.forward_s,
                "slowdown": self.all_to_all_rail_only_s / self.all_to_all_s - 1.0,
            },
        }
