"""Serving engine: wires the replica step model to the request-level simulation (layer L6).

Builds, for a model, a system and a per-replica layout, the step timer
(:func:`fabricsim.workload.inference.step_time`), each replica's KV capacity (paged token slots
that fit the KV budget, times the attention-DP ranks) and, for disaggregated pools, the KV
hand-off time; then runs :class:`fabricsim.engine.inference.scheduler.ServingSimulation`.
GPUs are numbered replica after replica; with ``P:D`` disaggregation the P prefill replicas come
first, so the KV of a request crosses from GPU ``g`` to GPU ``g + P x replica_gpus`` (NVLink if both
are in one scale-up domain, else the scale-out network), every GPU sending its shard in parallel.

Fit (:func:`pool_fits`): a pool fits when a replica's KV cache holds its longest request (the
longest prompt for a prefill pool, prompt + output otherwise); its memory per GPU is that of
``infer`` (:func:`fabricsim.engine.inference.memory_use`) for one such request per replica. A
deployment that does not fit is a result (``fits`` False), not an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.collectives.times import CollectiveTimes
from fabricsim.engine.inference.analytic import InferScenario, memory_use
from fabricsim.engine.inference.scheduler import (
    ClusterConfig,
    SchedulerConfig,
    ServingSimulation,
    ServingSummary,
    summarize,
)
from fabricsim.engine.inference.step import (
    CommunicationModel,
    InferenceLayout,
    KvBudgetPolicy,
    StepTimer,
    kv_budget_per_gpu,
    step_coefficients,
)
from fabricsim.specs import ModelSpec, SystemSpec
from fabricsim.transformer.kv_cache import capacity_tokens, kv_bytes_per_token_per_gpu
from fabricsim.workload.requests import RequestStream


@dataclass(frozen=True, slots=True)
class ServeScenario:
    """A serving deployment: ``layout.replicas`` mixed replicas, or ``disaggregate = (P, D)`` pools."""

    model: ModelSpec
    system: SystemSpec
    layout: InferenceLayout
    token_budget: int = 8192
    max_batch: int = 1024
    reserve_full: bool = False
    kv_free_fraction: float = 0.90
    disaggregate: tuple[int, int] | None = None
    cuda_graphs: bool = True


def replica_kv_tokens(scenario: ServeScenario) -> int:
    """KV token slots of one replica: per attention-DP rank, times the ranks."""
    layout = scenario.layout
    policy = KvBudgetPolicy(scenario.kv_free_fraction, scenario.token_budget)
    budget = kv_budget_per_gpu(scenario.model, scenario.system, layout, policy)
    per_token = kv_bytes_per_token_per_gpu(scenario.model, layout.kv_dtype, layout.tensor_parallel,
                                           layout.pipeline_parallel)
    return capacity_tokens(budget, per_token) * layout.attention_data_parallel


@dataclass(frozen=True, slots=True)
class PoolFit:
    """Does one pool (``mixed``, ``prefill`` or ``decode``) hold its longest request? Bytes per GPU,
    tokens per replica."""

    role: str
    fits: bool
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    kv_capacity_tokens: int
    longest_request_tokens: int

    def to_json(self) -> dict[str, object]:
        return {
            "fits": self.fits,
            "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "kv_capacity_tokens": self.kv_capacity_tokens,
            "longest_request_tokens": self.longest_request_tokens,
        }


def _pool_fit(scenario: ServeScenario, role: str, lengths: tuple[int, int]) -> PoolFit:
    """``lengths`` = (input, output) tokens of the pool's longest request."""
    policy = KvBudgetPolicy(scenario.kv_free_fraction, scenario.token_budget)
    one = InferScenario(scenario.model, scenario.system, scenario.layout, lengths[0], lengths[1], 1, policy)
    memory = memory_use(one, 1)
    tokens = replica_kv_tokens(scenario)
    longest = lengths[0] + lengths[1]
    return PoolFit(role, tokens >= longest and memory.fits, memory.per_gpu_bytes, memory.capacity_bytes,
                   tokens, longest)


def pool_fits(scenario: ServeScenario, stream: RequestStream) -> tuple[PoolFit, ...]:
    """The fit of every pool: one ``mixed`` pool, or ``prefill`` (longest prompt) and ``decode``
    (longest prompt + output) with ``disaggregate``."""
    total = stream.input_len + stream.output_len
    i = int(total.argmax())
    longest = (int(stream.input_len[i]), int(stream.output_len[i]))
    if not scenario.disaggregate:
        return (_pool_fit(scenario, "mixed", longest),)
    prompt = (int(stream.input_len.max()), 0)
    return _pool_fit(scenario, "prefill", prompt), _pool_fit(scenario, "decode", longest)


def make_timer(scenario: ServeScenario):
    """Step time (s) of one replica as a function of a step's :class:`StepWork`:
    :func:`fabricsim.engine.inference.step.step_time`, with its token-count parts kept per count
    (:class:`fabricsim.engine.inference.step.StepTimer`; the same floats)."""
    coeffs = step_coefficients(scenario.model, scenario.system, scenario.layout, scenario.cuda_graphs)
    return StepTimer(coeffs, CommunicationModel(scenario.system, scenario.layout, scenario.model))


def make_transfer(scenario: ServeScenario):
    """KV hand-off time (s) for a prompt of ``tokens`` tokens, from an alpha-beta fit of two
    send/recv estimates between the first prefill GPU and the first decode GPU."""
    layout = scenario.layout
    prefill = scenario.disaggregate[0] if scenario.disaggregate else 1
    stride = prefill * layout.replica_gpus
    per_token = kv_bytes_per_token_per_gpu(scenario.model, layout.kv_dtype, layout.tensor_parallel,
                                           layout.pipeline_parallel)
    small, large = 1 << 20, 1 << 26
    times = CollectiveTimes(scenario.system)
    t_small, t_large = times.send_recv_s(small, stride), times.send_recv_s(large, stride)
    beta = (t_large - t_small) / (large - small)
    alpha = max(0.0, t_small - beta * small)

    def transfer_s(tokens: int) -> float:
        return alpha + beta * tokens * per_token

    return transfer_s


def cluster_config(scenario: ServeScenario) -> ClusterConfig:
    scheduler = SchedulerConfig(
        kv_capacity_tokens=replica_kv_tokens(scenario),
        token_budget=scenario.token_budget,
        max_batch=scenario.max_batch,
        reserve_full=scenario.reserve_full,
    )
    if scenario.disaggregate:
        prefill, decode = scenario.disaggregate
        return ClusterConfig(scheduler, make_timer(scenario), mixed=0, prefill=prefill, decode=decode,
                             transfer_s=make_transfer(scenario))
    return ClusterConfig(scheduler, make_timer(scenario), mixed=scenario.layout.replicas)


def simulate_serving(scenario: ServeScenario, stream: RequestStream, slo_s: tuple[float, float]) -> ServingSummary:
    """Run the request-level simulation; ``slo_s`` = (TTFT SLO, TPOT SLO) in seconds."""
    outcome = ServingSimulation(stream, cluster_config(scenario)).run()
    return summarize(outcome, slo_s[0], slo_s[1])
