"""The ``goodput`` result and its JSON contract (layer L8)."""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.reliability.failures import ComponentCounts
from fabricsim.reliability.ocs import CubeBlastRadius


@dataclass(frozen=True, slots=True)
class GoodputResult:
    """A run of ``days`` under failures (``fabricsim goodput``).

    ``interruptions`` and ``ettr`` summarise the Monte-Carlo runs (mean, p10, p90);
    ``ettr_expected`` is the closed form. ``checkpoint_time_s`` is the blocking part of one
    checkpoint; ``checkpoint_overlapped_s`` the part behind training (async targets).
    ``lost_gpu_hours`` = GPUs × wall hours × (1 − mean ETTR). ``ocs``: on a pod of OCS-joined
    torus cubes (TPU v5p, TPU7x), what a failed cube costs with and without OCS
    (:mod:`fabricsim.reliability.ocs`); None elsewhere, and then absent from the JSON.
    """

    model: str
    system: str
    gpus: int
    days: float
    runs: int
    seed: int
    failure_rates: str
    failure_rates_basis: str  # "given", or the GPU generation the set was picked for
    checkpoint_target: str
    link_failures: str
    components: ComponentCounts
    interruptions: dict[str, float]
    interruptions_by_cause: tuple[tuple[str, float], ...]
    rerouted_link_failures: float
    mttf_s: float
    checkpoint_bytes: float
    checkpoint_interval_s: float
    checkpoint_time_s: float
    checkpoint_overlapped_s: float
    checkpoint_load_s: float
    restart_time_s: float
    degraded_throughput_fraction: float
    ettr: dict[str, float]
    ettr_expected: float
    step_time_s: float
    tokens_per_s: float
    goodput_tokens_per_s: float
    lost_gpu_hours: float
    ocs: CubeBlastRadius | None = None

    def to_json(self) -> dict[str, object]:
        counts = self.components
        out: dict[str, object] = {
            "model": self.model,
            "system": self.system,
            "gpus": self.gpus,
            "days": self.days,
            "runs": self.runs,
            "seed": self.seed,
            "failure_rates": self.failure_rates,
            "failure_rates_basis": self.failure_rates_basis,
            "checkpoint_target": self.checkpoint_target,
            "link_failures": self.link_failures,
            "components": {
                "gpus": counts.gpus,
                "hosts": counts.hosts,
                "nics": counts.nics,
                "switches": counts.switches,
                "cables": counts.cables,
                "fabric_cables": counts.fabric_cables,
            },
            "interruptions": dict(self.interruptions),
            "interruptions_by_cause": dict(self.interruptions_by_cause),
            "rerouted_link_failures": self.rerouted_link_failures,
            "mttf_s": self.mttf_s,
            "checkpoint_bytes": self.checkpoint_bytes,
            "checkpoint_interval_s": self.checkpoint_interval_s,
            "checkpoint_time_s": self.checkpoint_time_s,
            "checkpoint_overlapped_s": self.checkpoint_overlapped_s,
            "checkpoint_load_s": self.checkpoint_load_s,
            "restart_time_s": self.restart_time_s,
            "degraded_throughput_fraction": self.degraded_throughput_fraction,
            "ettr": dict(self.ettr),
            "ettr_expected": self.ettr_expected,
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "goodput_tokens_per_s": self.goodput_tokens_per_s,
            "lost_gpu_hours": self.lost_gpu_hours,
        }
        if self.ocs is not None:
            out["ocs"] = self.ocs.to_json()
        return out
