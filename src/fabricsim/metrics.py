"""Immutable results and the JSON contract of DESIGN.md (layer L7).

Each result is a frozen dataclass whose ``to_json()`` gives exactly the keys the contract names,
with units in the key names. Rendering (tables) lives in ``report``; files in ``io``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class CollectiveResult:
    """One collective's estimate. ``size_bytes`` follows nccl-tests' definition of S per op."""

    op: str
    gpus: int
    size_bytes: int
    algorithm: str
    protocol: str
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    fidelity: str = "analytic"

    def to_json(self) -> dict[str, object]:
        return {
            "op": self.op,
            "gpus": self.gpus,
            "size_bytes": self.size_bytes,
            "algorithm": self.algorithm,
            "protocol": self.protocol,
            "time_s": self.time_s,
            "algbw_GBps": self.algbw_GBps,
            "busbw_GBps": self.busbw_GBps,
            "fidelity": self.fidelity,
        }


@dataclass(frozen=True, slots=True)
class SweepSummary:
    """One ``fabricsim sweep`` run: tasks in the spec, computed now (ok / failed), already stored."""

    tasks_total: int
    tasks_done: int
    tasks_skipped: int
    tasks_failed: int
    elapsed_s: float
    db: str
    executor: str
    workers: int
    export: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "tasks_total": self.tasks_total,
            "tasks_done": self.tasks_done,
            "tasks_skipped": self.tasks_skipped,
            "tasks_failed": self.tasks_failed,
            "elapsed_s": self.elapsed_s,
            "db": self.db,
            "executor": self.executor,
            "workers": self.workers,
            "export": self.export,
        }


@dataclass(frozen=True, slots=True)
class TrainResult:
    """One training-step estimate (``fabricsim train``). ``time_breakdown_s`` adds up to
    ``step_time_s``; ``memory_breakdown_bytes`` adds up to ``memory_per_gpu_bytes`` (most loaded GPU).
    Model FLOPs exclude recomputation (MFU); hardware FLOPs include it (HFU)."""

    model: str
    system: str
    gpus: int
    global_batch: int
    seq_len: int
    microbatches: int
    step_time_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    fits: bool
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    memory_breakdown_bytes: tuple[tuple[str, float], ...]
    time_breakdown_s: tuple[tuple[str, float], ...]
    layout: tuple[tuple[str, object], ...]
    fidelity: str = "analytic"
    energy: tuple[tuple[str, object], ...] = ()  # power_W, energy_J_per_step, ... (fabricsim.cost.energy)
    tiers: tuple[tuple[str, object], ...] = ()  # offload only: per-tier memory keys (see to_json)

    def to_json(self) -> dict[str, object]:
        """The ``train`` contract; with offload also ``memory_breakdown_bytes_by_tier`` ({tier: {kind:
        bytes}}), ``memory_capacity_bytes_by_tier`` ({tier: bytes}) and ``memory_overflow_tiers``."""
        return {
            "model": self.model,
            "system": self.system,
            "gpus": self.gpus,
            "global_batch": self.global_batch,
            "seq_len": self.seq_len,
            "microbatches": self.microbatches,
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "model_tflops_per_gpu": self.model_tflops_per_gpu,
            "hardware_tflops_per_gpu": self.hardware_tflops_per_gpu,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "fits": self.fits,
            "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "memory_breakdown_bytes": dict(self.memory_breakdown_bytes),
            "time_breakdown_s": dict(self.time_breakdown_s),
            "layout": dict(self.layout),
            "fidelity": self.fidelity,
            **dict(self.energy),
            **dict(self.tiers),
        }


@dataclass(frozen=True, slots=True)
class SimulatedTrainResult:
    """A training step from the event-driven engine (``fabricsim train --fidelity simulate|flow``).

    ``train`` is the ``fabricsim train`` contract with the simulated step time (and the rates that
    follow from it) and a breakdown of the critical rank that adds up to it. With variability on,
    ``step_time_s_p50``/``step_time_s_p99`` are Monte-Carlo percentiles over ``seeds`` runs
    (``step_time_s`` stays the no-variability time). ``exposed_comm_s`` is communication not
    hidden behind compute, per collective category, per GPU; ``folded`` says what symmetry the
    engine used. ``simulation`` (not serialised) holds the op graph and timeline for traces.
    """

    train: TrainResult
    analytic_step_time_s: float
    step_time_s_p50: float | None
    step_time_s_p99: float | None
    seeds: int
    exposed_comm_s: tuple[tuple[str, float], ...]
    comm_busy_s: tuple[tuple[str, float], ...]
    folded: tuple[tuple[str, int], ...]
    simulated_ops: int
    simulation: object = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, object]:
        out = self.train.to_json()
        out.update(
            {
                "analytic_step_time_s": self.analytic_step_time_s,
                "exposed_comm_s": dict(self.exposed_comm_s),
                "comm_busy_s": dict(self.comm_busy_s),
                "folded": dict(self.folded),
                "simulated_ops": self.simulated_ops,
            }
        )
        if self.step_time_s_p50 is not None:
            out.update(
                {"step_time_s_p50": self.step_time_s_p50, "step_time_s_p99": self.step_time_s_p99, "seeds": self.seeds}
            )
        return out


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """One ranked plan: its result (``train`` or ``infer`` contract) and why it loses to rank 1."""

    rank: int
    result: Any  # TrainResult | SimulatedTrainResult | InferResult: anything with to_json()
    reasons: tuple[str, ...] = ()
    extra: tuple[tuple[str, object], ...] = ()  # planner facts, e.g. what limited an inference batch

    def to_json(self) -> dict[str, object]:
        return {"rank": self.rank, **self.result.to_json(), **dict(self.extra), "why": list(self.reasons)}


@dataclass(frozen=True, slots=True)
class PlanResult:
    """A layout search (``fabricsim plan train|infer``).

    ``evaluated``: valid layouts assessed (each timed, or rejected by a bound); ``feasible``: those
    that fit in memory (and meet the SLO for ``infer``); ``costed``: those the engine priced;
    ``pruned``: rejected per reason before costing. ``elapsed_s`` is wall time -- the only field
    that differs between identical runs. With nothing feasible, ``plans`` is empty and
    ``smallest_memory_per_gpu_bytes`` says how much the least hungry layout needs.
    """

    kind: str
    model: str
    system: str
    gpus: int
    objective: str
    evaluated: int
    feasible: int
    costed: int
    pruned: tuple[tuple[str, int], ...]
    elapsed_s: float
    plans: tuple[PlanEntry, ...]
    smallest_memory_per_gpu_bytes: float | None = None
    smallest_memory_layout: tuple[tuple[str, object], ...] | None = None
    refined: int = 0
    extra: tuple[tuple[str, object], ...] = ()  # e.g. the serving prefill/decode split search

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "model": self.model,
            "system": self.system,
            "gpus": self.gpus,
            "objective": self.objective,
            "evaluated": self.evaluated,
            "feasible": self.feasible,
            "costed": self.costed,
            "pruned": dict(self.pruned),
            "refined": self.refined,
            "elapsed_s": self.elapsed_s,
            "smallest_memory_per_gpu_bytes": self.smallest_memory_per_gpu_bytes,
            "smallest_memory_layout": dict(self.smallest_memory_layout) if self.smallest_memory_layout else None,
            **dict(self.extra),
            "plans": [plan.to_json() for plan in self.plans],
        }


@dataclass(frozen=True, slots=True)
class InferResult:
    """One static batch of inference (``fabricsim infer``). ``batch`` is sequences per model replica;
    ``output_tokens_per_s`` counts all replicas; ``kv_cache_bytes`` and ``memory_per_gpu_bytes`` are
    per GPU (the batch's KV at its final length; weights + KV + activations + framework)."""

    model: str
    system: str
    gpus: int
    ttft_s: float
    tpot_s: float
    e2e_latency_s: float
    batch: int
    output_tokens_per_s: float
    kv_cache_bytes: float
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    fits: bool
    layout: tuple[tuple[str, object], ...]
    time_breakdown_s: tuple[tuple[str, float], ...] = ()
    fidelity: str = "analytic"
    kv_spilled_bytes: float = 0.0
    energy: tuple[tuple[str, object], ...] = ()  # power_W, energy_J_per_token, ... (fabricsim.cost.energy)

    def to_json(self) -> dict[str, object]:
        return {
            "model": self.model,
            "system": self.system,
            "gpus": self.gpus,
            "kv_spilled_bytes": self.kv_spilled_bytes,
            "ttft_s": self.ttft_s,
            "tpot_s": self.tpot_s,
            "e2e_latency_s": self.e2e_latency_s,
            "batch": self.batch,
            "output_tokens_per_s": self.output_tokens_per_s,
            "kv_cache_bytes": self.kv_cache_bytes,
            "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "fits": self.fits,
            "layout": dict(self.layout),
            "time_breakdown_s": dict(self.time_breakdown_s),
            "fidelity": self.fidelity,
            **dict(self.energy),
        }


@dataclass(frozen=True, slots=True)
class ServeResult:
    """A simulated serving run (``fabricsim serve``): latency percentiles in seconds (``{p50, p90,
    p99}``), output tokens/s over the run (first arrival to last finish), SLO attainment (fraction of
    requests with TTFT and TPOT within the SLOs). ``fits``: every pool's replica KV cache holds its
    longest request (``kv_capacity_tokens`` per replica vs ``longest_request_tokens``);
    ``memory_per_gpu_bytes`` is what one such request per replica needs (most loaded pool; per pool
    in ``pools`` when disaggregated). A deployment that does not fit serves nothing: 0 completed,
    null percentiles."""

    model: str
    system: str
    gpus: int
    requests: int
    completed: int
    output_tokens_per_s: float
    requests_per_s: float
    ttft_s: tuple[tuple[str, float], ...]
    tpot_s: tuple[tuple[str, float], ...]
    e2e_s: tuple[tuple[str, float], ...]
    slo_attainment: float
    slo: tuple[tuple[str, float], ...]
    arrival_rate_per_s: float | None
    seed: int
    preemptions: int
    steps: int
    duration_s: float
    layout: tuple[tuple[str, object], ...]
    fidelity: str = "simulate"
    fits: bool = True
    memory_per_gpu_bytes: float = float("nan")
    memory_capacity_bytes: float = float("nan")
    kv_capacity_tokens: int = 0
    longest_request_tokens: int = 0
    pools: tuple[tuple[str, dict[str, object]], ...] = ()
    energy: tuple[tuple[str, object], ...] = ()  # power_W, energy_J_per_token, ... (fabricsim.cost.energy)

    def to_json(self) -> dict[str, object]:
        return {
            "model": self.model,
            "system": self.system,
            "gpus": self.gpus,
            "fits": self.fits,
            "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "longest_request_tokens": self.longest_request_tokens,
            "pools": dict(self.pools) if self.pools else None,
            "requests": self.requests,
            "completed": self.completed,
            "output_tokens_per_s": self.output_tokens_per_s,
            "requests_per_s": self.requests_per_s,
            "ttft_s": dict(self.ttft_s),
            "tpot_s": dict(self.tpot_s),
            "e2e_s": dict(self.e2e_s),
            "slo_attainment": self.slo_attainment,
            "slo": dict(self.slo),
            "arrival_rate_per_s": self.arrival_rate_per_s,
            "seed": self.seed,
            "preemptions": self.preemptions,
            "steps": self.steps,
            "duration_s": self.duration_s,
            "layout": dict(self.layout),
            "fidelity": self.fidelity,
            **dict(self.energy),
        }


@dataclass(frozen=True, slots=True)
class SimulatedInferResult:
    """A static inference batch from the event-driven engine (``fabricsim infer --fidelity simulate``).

    ``infer`` is the ``fabricsim infer`` contract (TTFT from the simulated prefill chunks, TPOT from
    the simulated steady-state decode; ``fidelity`` simulate or flow); with variability,
    ``tpot_s_p50``/``tpot_s_p99`` are percentiles over every simulated token of ``seeds`` runs
    (``tokens_sampled`` intervals) and ``ttft_s_p50``/``ttft_s_p99`` over the runs' batch TTFT.
    ``simulation`` (not serialised) holds the graph and timeline for traces.
    """

    infer: InferResult
    analytic_tpot_s: float
    tpot_s_p50: float | None
    tpot_s_p99: float | None
    seeds: int
    tokens_sampled: int
    folded: tuple[tuple[str, int], ...]
    simulated_ops: int
    simulation: object = field(default=None, compare=False, repr=False)
    analytic_ttft_s: float | None = None
    ttft_s_p50: float | None = None
    ttft_s_p99: float | None = None

    def to_json(self) -> dict[str, object]:
        out = self.infer.to_json()
        out.update(
            {"analytic_tpot_s": self.analytic_tpot_s, "folded": dict(self.folded), "simulated_ops": self.simulated_ops}
        )
        if self.analytic_ttft_s is not None:
            out["analytic_ttft_s"] = self.analytic_ttft_s
        if self.tpot_s_p50 is not None:
            out.update(
                {
                    "tpot_s_p50": self.tpot_s_p50,
                    "tpot_s_p99": self.tpot_s_p99,
                    "seeds": self.seeds,
                    "tokens_sampled": self.tokens_sampled,
                }
            )
        if self.ttft_s_p50 is not None:
            out.update({"ttft_s_p50": self.ttft_s_p50, "ttft_s_p99": self.ttft_s_p99})
        return out


@dataclass(frozen=True, slots=True)
class TrafficResult:
    """A synthetic traffic pattern on a topology, flow fidelity (``fabricsim traffic``).

    ``throughput_fraction`` is per sending host: bytes / completion / line rate, summarised as
    mean, 1st percentile and min; ``max_link_utilization`` is the peak carried rate / capacity.
    ``failed_links`` cables (both directions) were removed before the run; ``healthy`` then gives
    the same pattern's mean throughput fraction and completion without failures (null if none).
    """

    pattern: str
    topology: str
    routing: str
    seed: int
    hosts: int
    flows: int
    size_bytes: int
    throughput_mean: float
    throughput_p1: float
    throughput_min: float
    completion_time_s: float
    max_link_utilization: float
    events: int
    fidelity: str = "flow"
    failed_links: int = 0
    healthy_throughput_mean: float | None = None
    healthy_completion_time_s: float | None = None
    packet: dict[str, object] | None = None  # the packet fidelity's keys (fct_s, pause_s, ...), merged in

    def to_json(self) -> dict[str, object]:
        return {
            "pattern": self.pattern,
            "topology": self.topology,
            "routing": self.routing,
            "seed": self.seed,
            "hosts": self.hosts,
            "flows": self.flows,
            "size_bytes": self.size_bytes,
            "throughput_fraction": {"mean": self.throughput_mean, "p1": self.throughput_p1, "min": self.throughput_min},
            "completion_time_s": self.completion_time_s,
            "max_link_utilization": self.max_link_utilization,
            "events": self.events,
            "fidelity": self.fidelity,
            "failed_links": self.failed_links,
            "healthy": None
            if self.healthy_throughput_mean is None
            else {
                "throughput_fraction_mean": self.healthy_throughput_mean,
                "completion_time_s": self.healthy_completion_time_s,
            },
            **(self.packet or {}),
        }
