"""The results of every command but the analytic ``train`` (layer L7): see :mod:`fabricsim.metrics`
for the JSON contract. Kept apart so that a one-off ``fabricsim train`` does not create their
dataclasses (issue 27); ``fabricsim.metrics.<Name>`` loads this module on first use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fabricsim.metrics import EMPTY_AS_NULL, FLATTEN, SKIP, contract_json

if TYPE_CHECKING:
    from fabricsim.metrics import TrainResult


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
        return contract_json(self)


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
        return contract_json(self)


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
    network: dict[str, Any] | None = field(default=None, compare=False)  # flow/packet: the fabric's report

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
        if self.network is not None:
            out["network"] = self.network
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
    smallest_memory_layout: tuple[tuple[str, object], ...] | None = field(default=None, metadata=EMPTY_AS_NULL)
    refined: int = 0
    extra: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)  # e.g. the serving split search

    def to_json(self) -> dict[str, object]:
        return contract_json(self)


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
    energy: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)  # power_W, ... (cost.energy)

    def to_json(self) -> dict[str, object]:
        return contract_json(self)


@dataclass(frozen=True, slots=True)
class ServeResult:
    """A simulated serving run (``fabricsim serve``): latency percentiles in seconds (``{p50, p90,
    p99}``), output tokens/s over the run (first arrival to last finish), SLO attainment (fraction of
    requests with TTFT and TPOT within the SLOs). ``fits``: every pool's replica KV cache holds its
    longest request (``kv_capacity_tokens`` per replica vs ``longest_request_tokens``);
    ``memory_per_gpu_bytes`` is what one such request per replica needs (most loaded pool; per pool
    in ``pools`` when disaggregated). A deployment that does not fit serves nothing: 0 completed,
    null percentiles. ``kv_transfer_s``: the prefill -> decode KV hand-offs' {p50, p90, p99} (null
    without disaggregation); ``network_stall_s``: per step, what the fabric (flow/packet) and link
    jitter add to the analytic step, {p50, p99}; ``network``: the fabric's report at flow/packet."""

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
    arrival: str | None = None  # the arrival process (poisson | gamma:CV); None for a replayed request trace
    fits: bool = True
    memory_per_gpu_bytes: float = float("nan")
    memory_capacity_bytes: float = float("nan")
    kv_capacity_tokens: int = 0
    longest_request_tokens: int = 0
    pools: tuple[tuple[str, dict[str, object]], ...] = field(default=(), metadata=EMPTY_AS_NULL)
    # with --kv-pool: {capacity_bytes (the deployment's share), hit_rate, readmissions, bytes_moved,
    # stall_s, name, sharing_gpus}; null without a pool (engine.inference.kv_pool)
    kv_pool: tuple[tuple[str, object], ...] = field(default=(), metadata=EMPTY_AS_NULL)
    energy: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)  # power_W, ... (cost.energy)
    tpot_p99_over_p50: float = float("nan")
    kv_transfer_s: tuple[tuple[str, float], ...] = field(default=(), metadata=EMPTY_AS_NULL)  # P -> D hand-offs
    network_stall_s: tuple[tuple[str, float], ...] = (("p50", 0.0), ("p99", 0.0))  # per step, fabric + jitter
    network: dict[str, Any] | None = field(default=None, compare=False, metadata=SKIP)  # flow/packet: the fabric
    prefix_hit_rate: float = 0.0
    """Requests that found their whole shared prefix cached / requests (``--shared-prefix``)."""
    prefill_tokens_computed: int = 0
    """Prompt tokens the replicas computed (cached prefixes skipped, recomputation counted)."""
    tokens_per_step: float = float("nan")
    """Tokens decoded per decode step per sequence, measured (1 without ``--speculative``)."""

    def to_json(self) -> dict[str, object]:
        out = contract_json(self)
        if self.network is not None:
            out["network"] = self.network
        return out


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
    network: dict[str, Any] | None = field(default=None, compare=False)  # flow/packet: the fabric's report

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
        if self.network is not None:
            out["network"] = self.network
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


@dataclass(frozen=True, slots=True)
class ClusterJobResult:
    """One job of ``fabricsim cluster``: its step time alone on the fabric and shared with the
    other jobs (a training job's step, an inference job's decode step (TPOT), a traffic tenant's
    completion time), and the slowdown shared / alone."""

    name: str
    kind: str
    gpus: int
    placement: str
    alone_s: float
    shared_s: float

    @property
    def slowdown(self) -> float:
        return self.shared_s / self.alone_s

    def to_json(self) -> dict[str, object]:
        return {**contract_json(self), "slowdown": self.slowdown}


@dataclass(frozen=True, slots=True)
class TierLoad:
    """The directed links of one switch tier with every job running: utilisation = the link's carried
    rate (each job's bytes per step / its shared step time, summed) / capacity, the mean over the
    tier's links and the busiest one; ``bytes`` = what one step of every job puts on them."""

    tier: str
    mean_utilization: float
    max_utilization: float
    bytes: float

    def to_json(self) -> dict[str, object]:
        return {"mean_utilization": self.mean_utilization, "max_utilization": self.max_utilization, "bytes": self.bytes}


@dataclass(frozen=True, slots=True)
class ClusterResult:
    """Several jobs on one fabric (``fabricsim cluster``): per job alone vs shared, links by tier."""

    fabric: str
    routing: str
    fidelity: str
    background: str | None
    jobs: tuple[ClusterJobResult, ...]
    links: tuple[TierLoad, ...]

    def to_json(self) -> dict[str, object]:
        out = contract_json(self)
        out["links"] = {load.tier: load.to_json() for load in self.links}
        return out
