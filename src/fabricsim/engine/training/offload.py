"""Offloaded training: bytes per memory tier and the exposed transfer time (layer L6).

Placement comes from :func:`fabricsim.transformer.memory_tiers.place`; this module sizes its
inputs for a layout and costs the transfers on the tier's link (bytes/s per direction, shared by
the GPUs behind it; both directions run at once). Per micro-batch of the slowest stage:

* forward: weights in (host to GPU), stored activations out (GPU to host), overlapped with the
  forward compute;
* backward: weights in again and the activations back in, overlapped with backward + recompute;

the exposed part of each pass is ``max(0, max(bytes in, bytes out) / link + layers * latency -
compute)`` (one transfer per layer; Calculon, Isaev et al. SC'23, block offload overhead), paid by
every micro-batch and the pipeline bubble's.
Per step:

* optimizer offloaded: the gradient shard goes out during the last backward (hidden behind
  it when gradient reduction overlaps backward, as the reduction itself); the Adam step runs on
  the CPU, bound by the tier's DRAM bandwidth (``OPTIMIZER_BYTES_PER_PARAM_UPDATE`` per parameter
  at the GPU's share of the peak: a lower bound); the updated 16-bit shard comes back in,
  pipelined with the Adam step (ZeRO-Offload), its excess exposed;
* weights offloaded: the updated weights the CPU did not write in place (gathered from the other
  data-parallel ranks, or updated on the GPU) are written back out during the next step's first
  forward pass, sharing the outbound direction with that micro-batch's activations.

Not modelled: HBM bandwidth taken by the copies, a CPU slower than its DRAM bandwidth allows.
"""

from __future__ import annotations

from typing import NamedTuple

from fabricsim.engine.training.results import MemoryBreakdown, StageEntry, StageMemory, StageWork, TierMemory
from fabricsim.engine.training.step_time import grad_bucket_params
from fabricsim.specs import ParallelLayout
from fabricsim.specs.memory_tier import MemoryTierSpec, OffloadClass, OffloadSpec
from fabricsim.transformer.constants import OPTIMIZER_BYTES_PER_PARAM_UPDATE
from fabricsim.transformer.memory import WEIGHT_BYTES
from fabricsim.transformer.memory_tiers import (
    ClassShift,
    ResidentBytes,
    TierBytes,
    activations_shift,
    optimizer_shift,
    place,
    weights_shift,
)
from fabricsim.workload.pipeline import bubble_stage_times


class OffloadTime(NamedTuple):
    """Seconds: exposed transfers (``offload_s``) and the optimizer step on the CPU (None: on the GPU)."""

    exposed_s: float
    optimizer_s: float | None


def owned_params(layout: ParallelLayout, entry: StageEntry | StageMemory) -> float:
    """Parameters whose optimizer state this GPU holds (ZeRO >= 1 shards them as the memory model
    does: dense over dp·cp, experts over the expert-data-parallel group); LoRA: the adapters only."""
    dense, expert = entry.trained
    if layout.zero_stage >= 1:
        dense /= layout.data_context_parallel
        expert /= layout.expert_data_parallel
    return dense + expert


def weight_store_bytes(layout: ParallelLayout, entry: StageEntry | StageMemory) -> float:
    """16-bit weights this GPU keeps (its shard under ZeRO-3)."""
    if layout.zero_stage < 3:
        return WEIGHT_BYTES * (entry.dense_params + entry.expert_params)
    dense = entry.dense_params / layout.data_context_parallel
    return WEIGHT_BYTES * (dense + entry.expert_params / layout.expert_data_parallel)


def resident_bytes(
    layout: ParallelLayout, entry: StageEntry, base: MemoryBreakdown, microbatches: int
) -> ResidentBytes:
    """The inputs of :func:`fabricsim.transformer.memory_tiers.place` for one layout."""
    params = entry.dense_params + entry.expert_params
    layers = max(1, entry.layers)
    grad = entry.gradient_bytes
    stored = base.activations - entry.logits_activation - entry.recompute_working
    return ResidentBytes(
        resident=TierBytes(base.weights, base.gradients, base.optimizer_states, base.activations),
        weight_store_bytes=weight_store_bytes(layout, entry),
        gradient_shard_bytes=grad * owned_params(layout, entry),
        stored_activation_bytes=max(0.0, stored),
        layer_weight_bytes=WEIGHT_BYTES * params / layers,
        layer_activation_bytes=entry.activation_per_microbatch / layers,
        bucket_gradient_bytes=grad * min(sum(entry.trained), grad_bucket_params(layout.data_parallel)),
        microbatches=microbatches,
    )


def state_shifts(
    layout: ParallelLayout, entry: StageEntry | StageMemory, states: tuple[float, float, float], microbatches: int
) -> tuple[ClassShift, ClassShift]:
    """(optimizer, weights) shifts of ``layout`` holding ``states`` = (weights, gradients, optimizer)
    bytes: :func:`~fabricsim.transformer.memory_tiers.class_shifts` of :func:`resident_bytes`, the
    two that do not depend on the activations (the planner computes them once per ZeRO stage)."""
    weights, gradients, optimizer = states
    params = entry.dense_params + entry.expert_params
    grad = entry.gradient_bytes
    bucket = grad * min(sum(entry.trained), grad_bucket_params(layout.data_parallel))  # LoRA: the adapters
    return (
        optimizer_shift(gradients, optimizer, grad * owned_params(layout, entry), bucket, microbatches),
        weights_shift(weights, weight_store_bytes(layout, entry), WEIGHT_BYTES * params / max(1, entry.layers)),
    )


def activation_shift(entry: StageEntry | StageMemory, activations: float) -> ClassShift:
    """The activations' shift of a layout holding ``activations`` bytes (as :func:`state_shifts`;
    it depends on the virtual stages, not on the ZeRO stage)."""
    stored = max(0.0, activations - entry.logits_activation - entry.recompute_working)
    return activations_shift(activations, stored, entry.activation_per_microbatch / max(1, entry.layers))


def offload_memory(
    layout: ParallelLayout,
    entry: StageEntry,
    base: MemoryBreakdown,
    microbatches: int,
    tier: tuple[OffloadSpec, MemoryTierSpec],
) -> tuple[MemoryBreakdown, TierMemory]:
    """(HBM breakdown, tier usage) of ``layout`` with ``tier`` = (what is offloaded, where)."""
    offload, spec = tier
    hbm, below = place(resident_bytes(layout, entry, base, microbatches), offload)
    memory = MemoryBreakdown(hbm.weights, hbm.gradients, hbm.optimizer_states, hbm.activations, base.framework)
    return memory, TierMemory(offload, below, spec.capacity_per_gpu_bytes)


def _pass_exposed_s(inbound: float, outbound: float, link: tuple[float, float], compute_s: float) -> float:
    """Exposed seconds of one pass: the busier direction's bytes over ``link`` = (bytes/s per
    direction, latency of the pass's per-layer transfers) beyond the pass's compute."""
    bandwidth_Bps, latency_s = link
    busiest = max(inbound, outbound)
    return max(0.0, busiest / bandwidth_Bps + (latency_s if busiest else 0.0) - compute_s)


def offload_time(
    layout: ParallelLayout,
    entry: StageEntry,
    microbatches: int,
    tier: tuple[OffloadSpec, MemoryTierSpec],
    overlap_grad_reduce: bool,
) -> OffloadTime:
    """Exposed transfer seconds per step and the CPU optimizer step (module docstring)."""
    offload, spec = tier
    work: StageWork = entry.work
    link = (spec.link_bandwidth_per_gpu_Bps, spec.link.latency_s * max(1, entry.layers))  # a transfer per layer
    weights = weight_store_bytes(layout, entry) if offload.has(OffloadClass.WEIGHTS) else 0.0
    acts = entry.activation_per_microbatch if offload.has(OffloadClass.ACTIVATIONS) else 0.0
    backward_s = work.backward_s + work.recompute_s
    forward = _pass_exposed_s(weights, acts, link, work.forward_s)
    backward = _pass_exposed_s(weights + acts, 0.0, link, backward_s)
    passes = microbatches + bubble_stage_times(layout.pipeline_parallel, layout.virtual_stages)
    exposed = passes * (forward + backward)
    optimizer_s = None
    owned = owned_params(layout, entry)
    if offload.has(OffloadClass.OPTIMIZER):
        gradients = entry.gradient_bytes * owned
        if overlap_grad_reduce:
            exposed += _pass_exposed_s(weights + acts, gradients, link, backward_s) - backward
        else:
            exposed += gradients / link[0] + link[1]
        optimizer_s = owned * OPTIMIZER_BYTES_PER_PARAM_UPDATE / spec.memory_bandwidth_per_gpu_Bps
        if not weights:  # the updated 16-bit shard back to the GPU, pipelined with the CPU's Adam
            exposed += max(0.0, WEIGHT_BYTES * owned / link[0] - optimizer_s)
    if weights:
        updated_in_place = WEIGHT_BYTES * owned if offload.has(OffloadClass.OPTIMIZER) else 0.0
        write_back = max(0.0, weights - updated_in_place)
        exposed += _pass_exposed_s(weights, acts + write_back, link, work.forward_s) - forward
    return OffloadTime(exposed, optimizer_s)
