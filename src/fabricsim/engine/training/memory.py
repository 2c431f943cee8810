"""Memory per GPU of a training layout: model states and in-flight activations (layer L6).

Assembles the per-GPU figures of :mod:`fabricsim.transformer.memory` for the most loaded GPU of a
layout: the parameters of the largest pipeline stage (:func:`stage_parameters`), their model
states after ZeRO sharding (:func:`fabricsim.transformer.memory.state_bytes`, the one
implementation of the sharding rule), the activations stage 0 holds for its in-flight
micro-batches under the pipeline schedule (:func:`fabricsim.workload.pipeline.in_flight_microbatches`)
or, on the last stage, one micro-batch plus the logits, and the framework overhead.
Pure functions; the analytic engine (:mod:`fabricsim.engine.training.analytic`) caches their inputs per
per-GPU shape.
"""

from __future__ import annotations

from fabricsim.engine.training.results import MemoryBreakdown, StageEntry, StageMemory, new_memory_breakdown
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.transformer.compute import ShardShape
from fabricsim.transformer.constants import FRAMEWORK_MEMORY_BYTES
from fabricsim.transformer.flops import ModelDims
from fabricsim.transformer.memory import (
    WEIGHT_BYTES,
    layer_activation_bytes,
    logits_activation_bytes,
    state_bytes,
)
from fabricsim.workload import training as work
from fabricsim.workload.pipeline import in_flight_microbatches


def stage_parameters(
    dims: ModelDims,
    layout: ParallelLayout,
    mtp_layers: int = 0,
    accounting: work.PipelineSplit = work.PipelineSplit(),
    stage: work.StageLayers | None = None,
) -> tuple[float, float]:
    """(dense, expert) parameters on one GPU of the largest stage, before ZeRO sharding. Each
    multi-token-prediction depth adds one layer of the model's kind, its 2h -> h projection and two
    norms; they live on the last stage and are counted here on the largest one (an upper bound by at
    most one layer when the last stage holds fewer layers). ``accounting``: pipeline-split accounting
    of (embedding, loss) (:func:`fabricsim.workload.training.largest_stage`; ``stage``: its result
    when the caller has it)."""
    stage = stage or work.largest_stage(dims, layout.pipeline_parallel, accounting)
    expert_tp = layout.expert_tp if dims.experts else None
    dense, expert = work.stage_parameters(dims, stage, layout.tensor_parallel, layout.expert_parallel, expert_tp)
    if layout.pipeline_parallel == 1 and not dims.tied_embeddings:  # one GPU holds both ends
        dense += min(dims.embedding_params, dims.output_params) / layout.tensor_parallel
    if mtp_layers:
        moe = dims.moe_layers > 0
        one = work.StageLayers(layers=1, moe_layers=1 if moe else 0)
        layer_dense, layer_expert = work.stage_parameters(dims, one, layout.tensor_parallel, layout.expert_parallel,
                                                          expert_tp)
        layer_dense -= max(dims.embedding_params, dims.output_params) / layout.tensor_parallel  # shared with the model
        projection = (2 * dims.hidden * dims.hidden + 2 * dims.hidden) / layout.tensor_parallel
        dense += mtp_layers * (layer_dense + projection)
        expert += mtp_layers * layer_expert
    return dense, expert


def stage_activations(
    dims: ModelDims,
    layout: ParallelLayout,
    shape: ShardShape,
    mtp_layers: int = 0,
    accounting: work.PipelineSplit = work.PipelineSplit(),
    modules: frozenset[str] | None = None,
    stage: work.StageLayers | None = None,
) -> tuple[float, float, float]:
    """Bytes of (one micro-batch's activations on the largest stage, the last stage's extra
    activations of one micro-batch: the output layer's and per multi-token-prediction depth one more
    layer and output layer, the working set of one layer rebuilt under full recomputation).
    ``stage``: :func:`fabricsim.workload.training.largest_stage` when the caller has it."""
    stage = stage or work.largest_stage(dims, layout.pipeline_parallel, accounting)
    dtype = layout.dtype
    recompute = layout.recompute
    per_microbatch = stage.dense_layers * layer_activation_bytes(dims, shape, recompute, False, dtype, modules)
    per_microbatch += stage.moe_layers * layer_activation_bytes(dims, shape, recompute, True, dtype, modules)
    working = 0.0
    if layout.recompute is Recompute.FULL:  # one layer's activations rebuilt during its backward
        working = layer_activation_bytes(dims, shape, Recompute.NONE, stage.moe_layers > 0, dtype)
    tail = logits_activation_bytes(dims, shape)
    if mtp_layers:
        mtp_layer = layer_activation_bytes(dims, shape, recompute, dims.moe_layers > 0, dtype, modules)
        tail += mtp_layers * (mtp_layer + logits_activation_bytes(dims, shape))
    return per_microbatch, tail, working


def memory_breakdown(
    layout: ParallelLayout, entry: StageEntry, microbatches: int, states: tuple[float, float, float] | None = None
) -> MemoryBreakdown:
    """Bytes on the most loaded GPU: model states after ZeRO sharding
    (:func:`fabricsim.transformer.memory.state_bytes`; dense parameters over the dp·cp ranks that
    hold them (:attr:`~fabricsim.specs.ParallelLayout.data_context_parallel`), expert parameters over
    the expert-data-parallel size tp·cp·dp/(etp·ep)), plus under
    ZeRO-3 two gathered layers (current + prefetched); activations of the in-flight micro-batches on
    stage 0 (or one micro-batch plus the logits on the last stage); framework overhead. ``states``:
    the layout's :func:`model_state_bytes` when the caller has them (the analytic engine caches them
    per stage entry, data-parallel size and ZeRO stage)."""
    if states is None:
        shards = (layout.zero_stage, layout.data_context_parallel, layout.expert_data_parallel)
        states = model_state_bytes(entry, shards)
    weights, gradients, optimizer = states
    activations = activation_bytes(layout, entry, microbatches)
    return new_memory_breakdown((weights, gradients, optimizer, activations, FRAMEWORK_MEMORY_BYTES))


def model_state_bytes(entry: StageEntry | StageMemory, shards: tuple[int, int, int]) -> tuple[float, float, float]:
    """(weights, gradients, optimizer state) bytes of :func:`memory_breakdown`, ``shards`` = (ZeRO
    stage, data x context parallel, expert-data-parallel size): they depend on the ZeRO stage and
    not on the virtual stages or the micro-batch count (a planner sizes them once per ZeRO stage of
    a block)."""
    zero, dp, _ = shards
    states = state_bytes(entry.dense_params, entry.expert_params, shards, entry.gradient_bytes)
    weights = states.weights
    if entry.trainable_params is not None:  # LoRA: gradients and Adam state of the adapters only
        adapters = state_bytes(*entry.trained, shards, entry.gradient_bytes)
        states = states._replace(gradients=adapters.gradients, optimizer=adapters.optimizer)
    if zero == 3 and dp > 1:
        weights += 2.0 * WEIGHT_BYTES * (entry.dense_params + entry.expert_params) / max(1, entry.layers)
    return weights, states.gradients, states.optimizer


def activation_bytes(layout: ParallelLayout, entry: StageEntry | StageMemory, microbatches: int) -> float:
    """Activation bytes of :func:`memory_breakdown`: they depend on the virtual stages and the
    micro-batch count and not on the ZeRO stage."""
    pp = layout.pipeline_parallel
    first = in_flight_microbatches(pp, layout.virtual_stages, microbatches) * entry.activation_per_microbatch
    if pp == 1:
        activations = first + entry.logits_activation
    else:
        activations = max(first, entry.activation_per_microbatch + entry.logits_activation)
    return activations + entry.recompute_working
