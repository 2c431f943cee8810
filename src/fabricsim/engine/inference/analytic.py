"""Analytic fast path for one static batch of inference: TTFT, TPOT, throughput, memory (layer L6).

A batch of ``batch`` sequences per replica is prefilled together (TTFT = one prefill step of
``batch x input_len`` tokens with its quadratic attention), then decoded for ``output_len - 1``
steps; TPOT is the mean decode step over their contexts ``input_len + 1 .. input_len + output_len - 1``,
taken as the equal-weight mean of the step times at ``min(DECODE_SAMPLES, output_len - 1)`` evenly
spaced contexts from the first to the last (endpoints included). It is exact when every context is
sampled (``output_len <= DECODE_SAMPLES + 1``) or the step time is linear in the context; the step
time is piecewise linear (a max of compute and memory terms), so otherwise it is a close estimate of
the mean. Throughput counts every replica.
``batch=None`` takes the largest batch whose paged KV fits the KV budget of
:func:`fabricsim.workload.inference.kv_budget_per_gpu`. A batch that does not fit is reported with
``fits=False`` and its numbers.

Optional KV spill tier (host memory over PCIe, or a CXL memory pool): KV beyond the HBM budget lives
in ``spill.capacity_bytes`` per GPU behind a link of ``bandwidth_Bps`` and ``latency_s``; each step
streams the spilled share of the KV it attends over that link, overlapped with the HBM share
(prefetching, as offloading servers do), so attention's memory time is
``max(HBM share / HBM bandwidth, spilled share / link bandwidth + link latency)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from fabricsim.engine.inference.step import (
    CommunicationModel,
    InferenceLayout,
    KvBudgetPolicy,
    StepParts,
    activation_workspace_bytes,
    kv_budget_per_gpu,
    step_coefficients,
    step_time,
    weight_memory_per_gpu,
)
from fabricsim.specs import ModelSpec, SystemSpec
from fabricsim.transformer.constants import FRAMEWORK_MEMORY_BYTES
from fabricsim.transformer.inference import StepWork, prefill_attention_pairs
from fabricsim.transformer.kv_cache import kv_bytes_per_token_per_gpu, max_sequences, paged_tokens

DECODE_SAMPLES = 33
"""Most decode contexts at which :func:`infer_estimate` evaluates the step time for TPOT."""


DEFAULT_SPILL_CAPACITY_BYTES = 256e9
"""Host memory per GPU when the spill tier's size is not given: a DGX H100 has 2 TB of system memory
for 8 GPUs (NVIDIA DGX H100 user guide)."""


@dataclass(frozen=True, slots=True)
class KvSpill:
    """A KV spill tier per GPU: capacity (bytes) behind a link (bytes/s per direction, seconds)."""

    name: str
    bandwidth_Bps: float
    latency_s: float
    capacity_bytes: float = DEFAULT_SPILL_CAPACITY_BYTES


@dataclass(frozen=True, slots=True)
class InferScenario:
    """One static-batch inference question."""

    model: ModelSpec
    system: SystemSpec
    layout: InferenceLayout
    input_len: int
    output_len: int
    batch: int | None = None
    kv_policy: KvBudgetPolicy = field(default_factory=KvBudgetPolicy)
    spill: KvSpill | None = None
    cuda_graphs: bool = True
    """Decode steps replay CUDA graphs (:func:`fabricsim.engine.inference.step.graph_captured`)."""


@dataclass(frozen=True, slots=True)
class InferEstimate:
    ttft_s: float
    tpot_s: float
    e2e_latency_s: float
    batch: int
    output_tokens_per_s: float
    kv_cache_bytes: float
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    weights_per_gpu_bytes: float
    fits: bool
    prefill: StepParts
    decode: StepParts
    kv_spilled_bytes: float = 0.0


def kv_bytes_per_token_gpu(scenario: InferScenario) -> float:
    layout = scenario.layout
    return kv_bytes_per_token_per_gpu(scenario.model, layout.kv_dtype, layout.tensor_parallel, layout.pipeline_parallel)


def largest_batch(scenario: InferScenario) -> int:
    """Largest batch per replica whose paged KV (input + output tokens each) fits the KV budget;
    each attention-DP rank holds its own sequences."""
    budget = kv_budget_per_gpu(scenario.model, scenario.system, scenario.layout, scenario.kv_policy)
    budget += scenario.spill.capacity_bytes if scenario.spill else 0.0
    per_rank = max_sequences(budget, kv_bytes_per_token_gpu(scenario), scenario.input_len + scenario.output_len)
    return per_rank * scenario.layout.attention_data_parallel


def _decode_parts(scenario: InferScenario, batch: int, coeffs, comm: CommunicationModel) -> StepParts:
    start, output = scenario.input_len, scenario.output_len
    if output <= 1:
        return StepParts(0.0, 0.0, 0.0)
    contexts = np.linspace(start + 1, start + output - 1, min(DECODE_SAMPLES, output - 1))
    parts = [
        step_time(
            coeffs,
            comm,
            StepWork(tokens=batch, decode_pairs=batch * float(n), logits_tokens=batch, kv_tokens_read=batch * float(n)),
        )
        for n in contexts
    ]
    return StepParts(
        float(np.mean([p.linear_s for p in parts])),
        float(np.mean([p.attention_s for p in parts])),
        float(np.mean([p.communication_s for p in parts])),
    )


def prefill_chunks(scenario: InferScenario, batch: int) -> int:
    """Prefill steps of ``batch`` prompts: ``ceil(batch x input_len / max_step_tokens)``, at least 1."""
    return max(1, -(-batch * scenario.input_len // scenario.kv_policy.max_step_tokens))


def _prefill_parts(scenario: InferScenario, batch: int, coeffs, comm: CommunicationModel) -> StepParts:
    """The batch's prompts in ``ceil(batch x input_len / max_step_tokens)`` equal chunks of whole
    prompts (chunked prefill keeps the activations of one step bounded)."""
    prompt_tokens = batch * scenario.input_len
    chunks = prefill_chunks(scenario, batch)
    pairs = batch * prefill_attention_pairs(scenario.input_len, 0.0)
    one = step_time(
        coeffs,
        comm,
        StepWork(tokens=prompt_tokens / chunks, prefill_pairs=pairs / chunks, logits_tokens=batch / chunks),
    )
    return StepParts(chunks * one.linear_s, chunks * one.attention_s, chunks * one.communication_s)


def _spilled_bytes(scenario: InferScenario, kv_bytes: float) -> float:
    """KV bytes per GPU that do not fit the HBM budget and go to the spill tier (0 without one)."""
    if scenario.spill is None:
        return 0.0
    budget = kv_budget_per_gpu(scenario.model, scenario.system, scenario.layout, scenario.kv_policy)
    return min(max(0.0, kv_bytes - budget), scenario.spill.capacity_bytes)


@dataclass(frozen=True, slots=True)
class MemoryUse:
    """Per-GPU memory of ``batch`` sequences per replica at their final length (bytes)."""

    kv_bytes: float
    kv_spilled_bytes: float
    weights_bytes: float
    per_gpu_bytes: float
    capacity_bytes: float

    @property
    def fits(self) -> bool:
        return self.per_gpu_bytes <= self.capacity_bytes


def memory_use(scenario: InferScenario, batch: int) -> MemoryUse:
    """Memory per GPU (bytes) = weights + paged KV of ``ceil(batch / attention-DP)`` sequences of
    ``input_len + output_len`` tokens (less what spills) + the activations of a step of
    ``kv_policy.max_step_tokens`` tokens + the framework's reserve; capacity = HBM per GPU."""
    layout = scenario.layout
    per_rank = -(-batch // layout.attention_data_parallel)
    kv = per_rank * paged_tokens(scenario.input_len + scenario.output_len) * kv_bytes_per_token_gpu(scenario)
    spilled = _spilled_bytes(scenario, kv)
    weights = weight_memory_per_gpu(scenario.model, layout).total_bytes
    workspace = activation_workspace_bytes(scenario.model, layout, scenario.kv_policy.max_step_tokens)
    memory = weights + kv - spilled + workspace + FRAMEWORK_MEMORY_BYTES
    return MemoryUse(kv, spilled, weights, memory, scenario.system.device.hbm_capacity_bytes)


def infer_estimate(scenario: InferScenario) -> InferEstimate:
    """TTFT, TPOT, end-to-end latency and throughput of one static batch (seconds, tokens/s)."""
    model, system, layout = scenario.model, scenario.system, scenario.layout
    batch = largest_batch(scenario) if scenario.batch is None else scenario.batch
    fits_budget = batch >= 1
    batch = max(batch, 1)
    mem = memory_use(scenario, batch)
    kv, spilled = mem.kv_bytes, mem.kv_spilled_bytes
    coeffs = step_coefficients(model, system, layout, scenario.cuda_graphs)
    if spilled > 0 and scenario.spill is not None:
        coeffs = replace(coeffs, spill_fraction=spilled / kv, spill_Bps=scenario.spill.bandwidth_Bps,
                         spill_latency_s=scenario.spill.latency_s)
    comm = CommunicationModel(system, layout, model)
    prefill = _prefill_parts(scenario, batch, coeffs, comm)
    decode = _decode_parts(scenario, batch, coeffs, comm)
    e2e = prefill.total_s + (scenario.output_len - 1) * decode.total_s
    return InferEstimate(
        ttft_s=prefill.total_s,
        tpot_s=decode.total_s,
        e2e_latency_s=e2e,
        batch=batch,
        output_tokens_per_s=layout.replicas * batch * scenario.output_len / e2e,
        kv_cache_bytes=kv,
        memory_per_gpu_bytes=mem.per_gpu_bytes,
        memory_capacity_bytes=mem.capacity_bytes,
        weights_per_gpu_bytes=mem.weights_bytes,
        fits=fits_budget and mem.fits,
        prefill=prefill,
        decode=decode,
        kv_spilled_bytes=spilled,
    )
