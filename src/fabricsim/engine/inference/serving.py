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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from fabricsim.collectives.times import CollectiveTimes
from fabricsim.engine.inference.analytic import InferScenario, memory_use
from fabricsim.engine.inference.kv_pool import PoolConfig, pool_config
from fabricsim.engine.inference.scheduler import (
    ClusterConfig,
    Policy,
    Router,
    SchedulerConfig,
    ServingSimulation,
    ServingSummary,
    Speculation,
    StepNetwork,
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
from fabricsim.specs.memory_tier import KvPoolSpec
from fabricsim.transformer.kv_cache import capacity_tokens, kv_bytes_per_token_per_gpu
from fabricsim.workload.requests import RequestStream

if TYPE_CHECKING:  # the fabric loop (scipy) loads only when a serving network is built
    from fabricsim.engine.fabric_loop import Fabric
    from fabricsim.engine.inference.serving_fabric import ServingFabric


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
    kv_pool: KvPoolSpec | None = None  # a shared CXL pool for evicted KV ...
    pool_sharing_gpus: int = 0  # ... and the GPUs sharing it (>= the deployment's)
    features: ServingFeatures | None = None
    cuda_graphs: bool = True


@dataclass(frozen=True, slots=True)
class ServingFeatures:
    """Scheduler features of :mod:`fabricsim.engine.inference.scheduler` (defaults: off, as before):
    batching ``policy``, ``shared_prefix`` fraction, ``speculative`` = (K draft tokens, acceptance)
    or None, ``router`` across replicas and the ``seed`` of the random router."""

    policy: Policy = Policy.CHUNKED
    shared_prefix: float = 0.0
    speculative: tuple[int, float] | None = None
    router: Router = Router.LEAST_WORK
    seed: int = 0


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


def serving_network(
    scenario: ServeScenario,
    fabrics: Sequence[Fabric] | None = None,
    host_of_gpu: np.ndarray | None = None,
    link_jitter: float = 0.0,
    seed: int = 0,
) -> ServingFabric:
    """The deployment's steps and KV hand-offs on ``fabrics`` (one per background sample; None: the
    analytic times), with ``link_jitter``; see :mod:`fabricsim.engine.inference.serving_fabric`."""
    from fabricsim.engine.inference.serving_fabric import Deployment, ServingFabric

    layout = scenario.layout
    per_token = kv_bytes_per_token_per_gpu(scenario.model, layout.kv_dtype, layout.tensor_parallel,
                                           layout.pipeline_parallel)
    deployment = Deployment(scenario.model, scenario.system, layout, layout.replicas, per_token)
    transfer = make_transfer(scenario) if scenario.disaggregate else None
    return ServingFabric(deployment, make_timer(scenario), transfer, fabrics, host_of_gpu, link_jitter, seed)


def kv_pool_config(scenario: ServeScenario) -> PoolConfig | None:
    """The deployment's view of its shared KV pool (:mod:`fabricsim.engine.inference.kv_pool`): a
    token's KV lives on the TP x PP GPUs of one attention rank, which move it in parallel."""
    if scenario.kv_pool is None:
        return None
    layout = scenario.layout
    per_token = kv_bytes_per_token_per_gpu(scenario.model, layout.kv_dtype, layout.tensor_parallel,
                                           layout.pipeline_parallel)
    gpus = (scenario.pool_sharing_gpus, layout.replicas * layout.replica_gpus)
    return pool_config(scenario.kv_pool, gpus, per_token, layout.tensor_parallel * layout.pipeline_parallel)


def speculation(model: ModelSpec, speculative: tuple[int, float] | None) -> Speculation | None:
    """K draft tokens at acceptance A, drafted by an MTP-style module of one transformer layer
    (DeepSeek-V3 technical report, sec. 2.2: each MTP depth is one transformer block sharing the
    embedding and output head): a draft pass costs 1 / ``num_hidden_layers`` of a decode step. The
    shared output head is scaled with it, so the draft cost is a lower bound."""
    if speculative is None:
        return None
    return Speculation(speculative[0], speculative[1], 1.0 / model.num_hidden_layers)


def cluster_config(scenario: ServeScenario, network: StepNetwork | None = None) -> ClusterConfig:
    features = scenario.features or ServingFeatures()
    scheduler = SchedulerConfig(
        kv_capacity_tokens=replica_kv_tokens(scenario),
        token_budget=scenario.token_budget,
        max_batch=scenario.max_batch,
        reserve_full=scenario.reserve_full,
        policy=features.policy,
        shared_prefix=features.shared_prefix,
        speculation=speculation(scenario.model, features.speculative),
    )
    routing = {"router": features.router, "seed": features.seed}
    if scenario.disaggregate:
        prefill, decode = scenario.disaggregate
        return ClusterConfig(scheduler, make_timer(scenario), mixed=0, prefill=prefill, decode=decode,
                             transfer_s=make_transfer(scenario), network=network, kv_pool=kv_pool_config(scenario),
                             **routing)
    return ClusterConfig(scheduler, make_timer(scenario), mixed=scenario.layout.replicas, network=network,
                         kv_pool=kv_pool_config(scenario), **routing)


def simulate_serving(
    scenario: ServeScenario, stream: RequestStream, slo_s: tuple[float, float], network: StepNetwork | None = None
) -> ServingSummary:
    """Run the request-level simulation; ``slo_s`` = (TTFT SLO, TPOT SLO) in seconds; ``network``
    times the steps and KV hand-offs (default: the analytic step and hand-off times)."""
    outcome = ServingSimulation(stream, cluster_config(scenario, network)).run()
    return summarize(outcome, slo_s[0], slo_s[1])
