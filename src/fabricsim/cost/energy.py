"""Energy from power and time (layer L8). Joules; kWh = 3.6e6 J.

E = P x t at the facility (cooling included). Training: J per step = P x step time, J per token =
that / (global batch x sequence length). Inference and serving: J per output token = P / output
tokens per second (prefill time included, at the achieved batch). Fabric: J per byte through one
cable of a class = the cable's share of power (its switch ports' share of the switch, its optics)
/ (2 x line rate), both directions at line rate.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, NamedTuple

from fabricsim.cost.bom import Bom
from fabricsim.cost.power import PowerBreakdown
from fabricsim.cost.spec import CostCatalog, Medium

if TYPE_CHECKING:  # annotations only: a train creates no other result class (fabricsim.metrics.others)
    from fabricsim.metrics import InferResult, ServeResult, TrainResult

J_PER_KWH = 3.6e6


def energy_J(power_W: float, time_s: float) -> float:
    return power_W * time_s


def per_token_J(power_W: float, tokens_per_s: float) -> float | None:
    """J per token at ``tokens_per_s``; None (JSON null) when nothing is produced."""
    return power_W / tokens_per_s if tokens_per_s > 0 else None


def tokens_per_kWh(joules_per_token: float | None) -> float | None:
    return J_PER_KWH / joules_per_token if joules_per_token else None


def run_energy_MWh(power_W: float, tokens: float, goodput_tokens_per_s: float) -> float:
    """Facility energy (MWh) of a whole run of ``tokens`` at ``goodput_tokens_per_s`` (the rate
    after failures, restarts and checkpoints): P x tokens / goodput; 1 MWh = 3.6e9 J."""
    if goodput_tokens_per_s <= 0:
        raise ValueError("goodput_tokens_per_s must be positive")
    return power_W * tokens / goodput_tokens_per_s / 3.6e9


def cable_J_per_byte(bom: Bom, catalog: CostCatalog, switch_W: float, radix: int) -> dict[str, float]:
    """J per byte carried by one cable of each class in ``bom`` (module docstring)."""
    line_Bps = bom.port_gbps * 1e9 / 8
    port = catalog.optics.get(bom.port_gbps)
    out: dict[str, float] = {}
    for line in bom.cables:
        switch_ends = 1 if line.cable_class == "access" else 2
        watts = switch_ends * switch_W / radix
        if line.medium == Medium.FIBER and port is not None:
            switch_end = port.cpo_W if bom.cpo_ports and port.cpo_W is not None else port.pluggable_W
            watts += switch_ends * switch_end + (2 - switch_ends) * port.pluggable_W
        elif line.medium == Medium.AEC:
            watts += 2 * catalog.cables[Medium.AEC].power_W_per_end
        out[line.cable_class] = watts / (2 * line_Bps)
    return out


def _fields(power: PowerBreakdown, joules_per_token: float | None) -> dict[str, object]:
    return {
        "power_W": power.to_json(),
        "energy_J_per_token": joules_per_token,
        "tokens_per_kWh": tokens_per_kWh(joules_per_token),
    }


def train_energy(result: TrainResult, power: PowerBreakdown) -> TrainResult:
    """``result`` with ``power_W``, ``energy_J_per_step``, ``energy_J_per_token``, ``tokens_per_kWh``."""
    energy = train_energy_pairs(power, result.step_time_s, result.global_batch * result.seq_len)
    return dataclasses.replace(result, energy=energy)


class TrainPower(NamedTuple):
    """A cluster's power under training load read once for the energy of many steps (reading
    ``total``, two properties, and ``to_json`` cost as much as the energy arithmetic)."""

    power: PowerBreakdown
    total_W: float
    json: dict[str, float]  # power.to_json(): copied per result (a caller may change its copy)

    def energy(self, step_time_s: float, tokens: int) -> tuple:
        """The values of :data:`TRAIN_ENERGY_KEYS` of a step of ``step_time_s`` seconds and ``tokens``
        tokens (global batch x sequence length); ``power_W`` is a new dict per call."""
        step_J = self.total_W * step_time_s  # energy_J(power.total, step_time_s)
        per_token = step_J / tokens
        return step_J, self.json.copy(), per_token, tokens_per_kWh(per_token)


_POWERS: dict[int, TrainPower] = {}  # id of the power -> its figures (which keep it alive)
POWERS_KEPT = 256


def train_power_figures(power: PowerBreakdown) -> TrainPower:
    """The :class:`TrainPower` of ``power``, read once per power object (power objects are cached
    per cluster, :mod:`fabricsim.api.cost`). A hit is this power: the entry keeps it alive, and two
    live objects never share an id."""
    figures = _POWERS.get(id(power))
    if figures is None:
        if len(_POWERS) >= POWERS_KEPT:
            _POWERS.clear()
        figures = _POWERS[id(power)] = TrainPower(power, power.total, power.to_json())
    return figures


TRAIN_ENERGY_KEYS = ("energy_J_per_step", "power_W", "energy_J_per_token", "tokens_per_kWh")


def train_energy_pairs(power: PowerBreakdown, step_time_s: float, tokens: int) -> tuple[tuple[str, object], ...]:
    """The energy keys of a training step (:func:`train_energy`) of ``step_time_s`` seconds and
    ``tokens`` tokens (global batch x sequence length) at ``power``, as the result's name/value
    pairs (:data:`TRAIN_ENERGY_KEYS` and :meth:`TrainPower.energy`)."""
    return tuple(zip(TRAIN_ENERGY_KEYS, train_power_figures(power).energy(step_time_s, tokens), strict=True))


def retime_train_energy(result: TrainResult) -> TrainResult:
    """``result`` with its energy recomputed at its own step time (same power), e.g. after the
    event-driven engine replaced the analytic step time; unchanged when it carries no energy."""
    power = dict(result.energy).get("power_W")
    if not isinstance(power, dict):
        return result
    step_J = energy_J(float(power["total"]), result.step_time_s)
    per_token = step_J / (result.global_batch * result.seq_len)
    fields = {"energy_J_per_step": step_J, "power_W": power, "energy_J_per_token": per_token}
    return dataclasses.replace(result, energy=tuple((fields | {"tokens_per_kWh": tokens_per_kWh(per_token)}).items()))


def retime_infer_energy(result: InferResult) -> InferResult:
    """``result`` with J per output token recomputed at its own throughput (same power)."""
    energy = dict(result.energy)
    power = energy.get("power_W")
    if not isinstance(power, dict):
        return result
    per_token = per_token_J(float(power["total"]), result.output_tokens_per_s)
    energy.update({"energy_J_per_token": per_token, "tokens_per_kWh": tokens_per_kWh(per_token)})
    return dataclasses.replace(result, energy=tuple(energy.items()))


def infer_energy(result: InferResult, power: PowerBreakdown, idle: PowerBreakdown) -> InferResult:
    """``result`` with ``power_W`` (busy), ``idle_power_W`` and J per output token at its batch."""
    fields = {**_fields(power, per_token_J(power.total, result.output_tokens_per_s)), "idle_power_W": idle.total}
    return dataclasses.replace(result, energy=tuple(fields.items()))


def serve_energy(result: ServeResult, power: PowerBreakdown) -> ServeResult:
    """``result`` with ``power_W`` and J per output token over the run."""
    fields = _fields(power, per_token_J(power.total, result.output_tokens_per_s))
    return dataclasses.replace(result, energy=tuple(fields.items()))
