"""Analytic training-step estimate: closed form, microseconds per layout (layer L6).

One step of a layout is: ``m`` micro-batches through the slowest pipeline stage (forward,
backward, recomputation and the exposed tensor/context/expert-parallel collectives and pipeline
send/recv of each), the pipeline bubble ((pp - 1)/vpp of a micro-batch's stage time), the exposed
part of the data-parallel gradient reduction (and ZeRO gathers), and the optimizer step::

    step = m·t_microbatch + (pp-1)/vpp·t_stage + dp_exposed + optimizer

The breakdown in :class:`TimeBreakdown` adds up to ``step_time_s`` exactly. Results are immutable
named tuples (cheaper to build than frozen dataclasses on this hot path). Work that depends only
on (model, system, options), on the per-layer shape or on a stage's placement (its data-parallel
size and ZeRO stage, :class:`PlacedStage`) is cached in a :class:`TrainingContext` the caller
owns, so a planner sweeping millions of layouts with one context pays mostly for the layout check
and the scaling by the micro-batch count. The step-time formulas live in :mod:`fabricsim.engine.training.step_time`,
the memory assembly in :mod:`fabricsim.engine.training.memory`; this module owns the context and
the entry points.

Public entry points: :func:`training_context` then ``ctx.estimate`` / ``ctx.memory`` (sweeps),
:func:`estimate_training` (one full estimate), :func:`training_memory` (memory only, for pruning),
:func:`check_layout` (raises ``FabricsimError`` for invalid layouts), :func:`resolve_layout`.
"""

from __future__ import annotations

from functools import lru_cache

from fabricsim.collectives.times import CollectiveTimes
from fabricsim.engine.training.memory import memory_breakdown, model_state_bytes, stage_activations, stage_parameters
from fabricsim.engine.training.offload import activation_shift, offload_memory, offload_time, state_shifts
from fabricsim.engine.training.results import (
    MemoryBreakdown,
    PlacedStage,
    StageEntry,
    StageMemory,
    StageWork,
    TierMemory,
    TimeBreakdown,
    TrainingEstimate,
    new_training_estimate,
)
from fabricsim.engine.training.step_time import (
    A2A,
    AG,
    AR,
    GRAD_BUCKET_PARAMS,
    RS,
    body_work,
    dp_exposed_s,
    optimizer_s,
    pipeline_stages,
    pipeline_terms,
    shard_shape,
    stage_comm_sizes,
    stage_work,
    step_time,
    zero3_exposed_s,
)
from fabricsim.specs import ModelSpec, ParallelLayout, Recompute, SystemSpec
from fabricsim.specs.memory_tier import OFFLOAD_ORDER, MemoryTierSpec, OffloadSpec
from fabricsim.transformer.compute import (
    DeviceRates,
    LayerTimes,
    ShardShape,
    device_rates,
    layer_forward_times,
    logits_times_s,
)
from fabricsim.transformer.flops import (
    ModelDims,
    hardware_flops_per_step,
    model_dims,
    model_flops_per_step,
    weight_gradient_flops,
)
from fabricsim.transformer.memory_tiers import ClassShift
from fabricsim.workload import training as work
from fabricsim.workload.training import TrainingOptions

__all__ = [
    "A2A",
    "AG",
    "AR",
    "GRAD_BUCKET_PARAMS",
    "RS",
    "MemoryBreakdown",
    "PlacedStage",
    "StageEntry",
    "StageWork",
    "TierMemory",
    "TimeBreakdown",
    "TrainingContext",
    "TrainingEstimate",
    "TrainingOptions",
    "check_layout",
    "estimate_training",
    "resolve_layout",
    "training_context",
    "training_memory",
]


class TrainingContext:
    """Per-(model, system, options) precomputation and caches of one sweep; no I/O.

    The caller owns it: build one with :func:`training_context` and reuse it for every layout
    of a sweep (the caches only grow, by distinct per-GPU shape, placement and collective); a
    context is not shared between threads. Nothing is cached at module level.
    """

    __slots__ = (
        "_accounting",
        "_flops",
        "_hbm_bytes",
        "_layer_times",
        "_logits_times",
        "_memory_cache",
        "_mtp_layers",
        "_offload_plans",
        "_peaks",
        "_pipeline_stages",
        "_placed_cache",
        "_rates",
        "_stage_cache",
        "comm",
        "dims",
        "layer_works",
        "options",
        "system",
    )

    def __init__(self, model: ModelSpec, system: SystemSpec, options: TrainingOptions) -> None:
        options.validate()
        self.dims: ModelDims = model_dims(model)
        self.system = system
        self.options = options
        self._accounting = options.pipeline_accounting  # a property that parses the layout string: once
        self._mtp_layers = options.mtp_layers
        self._hbm_bytes = system.device.hbm_capacity_bytes
        self.comm = CollectiveTimes(system)
        self._rates: dict[str, DeviceRates] = {}
        self._peaks: dict[str, float] = {}
        self._flops: dict[tuple[int, int, Recompute], tuple[float, float]] = {}
        self._stage_cache: dict[tuple, StageEntry] = {}
        self._memory_cache: dict[tuple, StageMemory] = {}
        self._offload_plans: dict[int, tuple] = {}  # fitting_choices' per-choices preparation (kept with them)
        self._placed_cache: dict[tuple[int, int, int], PlacedStage] = {}
        self._layer_times: dict[tuple[str, ShardShape, bool], LayerTimes] = {}
        self._logits_times: dict[tuple[str, ShardShape], tuple[float, float]] = {}
        self._pipeline_stages: dict[int, tuple[work.StageLayers, int]] = {}
        self.layer_works: dict[tuple, StageWork] = {}  # step_time's one-layer work per (dtype, shape, MoE, recompute)

    @property
    def shapes_cached(self) -> int:
        """Per-shape stage entries held (what the caches grow by)."""
        return len(self._stage_cache)

    def rates(self, dtype: str) -> DeviceRates:
        rates = self._rates.get(dtype)
        if rates is None:
            rates = self._rates[dtype] = device_rates(self.system.device, dtype, self.options.fp8_recipe)
        return rates

    def layer_times(self, dtype: str, shape: ShardShape, moe: bool) -> LayerTimes:
        """Forward seconds of one (dense or MoE) layer of ``shape`` (cached: one per-GPU shape recurs
        across pipeline depths and recomputation modes, which a stage entry's key tells apart)."""
        key = (dtype, shape, moe)
        times = self._layer_times.get(key)
        if times is None:
            times = self._layer_times[key] = layer_forward_times(self.dims, self.rates(dtype), shape, moe)
        return times

    def logits_times(self, dtype: str, shape: ShardShape) -> tuple[float, float]:
        """(forward, backward) seconds of the output layer and loss of ``shape`` (cached as :meth:`layer_times`)."""
        key = (dtype, shape)
        times = self._logits_times.get(key)
        if times is None:
            times = self._logits_times[key] = logits_times_s(self.dims, self.rates(dtype), shape)
        return times

    def peak_flops(self, dtype: str) -> float:
        peak = self._peaks.get(dtype)
        if peak is None:
            peak = self._peaks[dtype] = self.system.device.peak(dtype)
        return peak

    def flops(self, global_batch: int, seq_len: int, recompute: Recompute) -> tuple[float, float]:
        """(model, hardware) FLOPs of one step."""
        key = (global_batch, seq_len, recompute)
        flops = self._flops.get(key)
        if flops is None:
            # frozen base weights (LoRA): no weight-gradient GEMMs, in the model's FLOPs as in the hardware's
            frozen = weight_gradient_flops(self.dims, global_batch, seq_len) if self.options.frozen_base else 0.0
            flops = self._flops[key] = (
                model_flops_per_step(self.dims, global_batch, seq_len, self.options.mtp_layers) - frozen,
                hardware_flops_per_step(
                    self.dims, global_batch, seq_len, recompute, self.options.mtp_layers, self.options.selective_modules
                ) - frozen,
            )
        return flops

    def microbatches(self, layout: ParallelLayout, global_batch: int, seq_len: int) -> int:
        """Micro-batches per step; raises ``FabricsimError`` for a layout that cannot run."""
        return work.check_layout(self.dims, layout, None, global_batch, seq_len, self._accounting, self._mtp_layers)

    def stage(self, layout: ParallelLayout, seq_len: int) -> StageEntry:
        """Everything about the slowest stage that depends on the per-GPU shape only (cached)."""
        key = _stage_key(layout, seq_len)
        entry = self._stage_cache.get(key)
        if entry is None:
            entry = self._stage_cache[key] = _stage_entry(self, layout, seq_len)
        return entry

    def stage_memory(self, layout: ParallelLayout, seq_len: int, shape: ShardShape | None = None) -> StageMemory:
        """The memory side of :meth:`stage` (cached apart: sizing a layout needs no stage work).
        ``shape``: the layout's :func:`shard_shape` when the caller has it."""
        key = _stage_key(layout, seq_len)
        memory = self._memory_cache.get(key)
        if memory is None:
            memory = self._memory_cache[key] = _stage_memory(self, layout, shape or shard_shape(self, layout, seq_len))
        return memory

    def body_work(self, layout: ParallelLayout, seq_len: int, shape: ShardShape | None = None) -> StageWork:
        """:func:`~fabricsim.engine.training.step_time.body_work` of ``layout``: its stage's work
        without the output layer, no field above :meth:`stage`'s (a time bound before sizing it).
        ``shape``: the layout's :func:`shard_shape` when the caller has it."""
        stage = self.pipeline_stages(layout.pipeline_parallel)[0]
        return body_work(self, layout, (seq_len, shape or shard_shape(self, layout, seq_len), stage))

    def shard_shape(self, layout: ParallelLayout, seq_len: int) -> ShardShape:
        """:func:`~fabricsim.engine.training.step_time.shard_shape` (for callers that pass it on)."""
        return shard_shape(self, layout, seq_len)

    def pipeline_stages(self, pipeline_parallel: int) -> tuple[work.StageLayers, int]:
        """:func:`~fabricsim.engine.training.step_time.pipeline_stages` (cached per pipeline depth)."""
        stages = self._pipeline_stages.get(pipeline_parallel)
        if stages is None:
            stages = self._pipeline_stages[pipeline_parallel] = pipeline_stages(self, pipeline_parallel)
        return stages

    def stage_work(self, layout: ParallelLayout, seq_len: int) -> StageWork:
        return self.stage(layout, seq_len).work

    def data_parallel_s(self, layout: ParallelLayout, entry: StageEntry) -> tuple[float, float, float]:
        """(exposed DP reduction + gathers per step, ZeRO-3 exposed per micro-batch, optimizer) seconds
        (of :meth:`placed_stage`)."""
        placed = self.placed_stage(layout, entry)
        return placed.dp_exposed_s, placed.zero3_s, placed.optimizer_s

    def placed_stage(self, layout: ParallelLayout, entry: StageEntry) -> PlacedStage:
        """``entry`` on the layout's data-parallel size and ZeRO stage: its data-parallel, optimizer
        and pipeline seconds and its model-state bytes, which an estimate scales by the micro-batch
        count (cached: every virtual-stage count and global batch of the placement shares them).

        ``entry`` is one of this context's cached stage entries; they live as long as the context,
        so their ``id`` is a stable key (with the entry's shape, the data-parallel size fixes dp x cp
        and the expert-data-parallel size).
        """
        key = (id(entry), layout.data_parallel, layout.zero_stage)
        placed = self._placed_cache.get(key)
        if placed is None:
            params = (entry.dense_params, entry.expert_params)  # ZeRO-3 gathers every weight, frozen or not
            zero3 = zero3_exposed_s(self, layout, entry.work, params)
            shards = (layout.zero_stage, layout.data_context_parallel, layout.expert_data_parallel)
            placed = self._placed_cache[key] = PlacedStage(
                dp_exposed_s(self, layout, entry.work, entry.trained),
                zero3,
                optimizer_s(self, layout, entry.trained),
                *pipeline_terms(self, layout, entry, zero3),
                model_state_bytes(entry, shards),
            )
        return placed

    def memory(self, layout: ParallelLayout, global_batch: int, seq_len: int) -> MemoryBreakdown:
        """Memory per GPU only (bytes by kind), for pruning layouts before timing them.

        Raises ``FabricsimError`` for an invalid layout.
        """
        microbatches = self.microbatches(layout, global_batch, seq_len)
        entry = self.stage(layout, seq_len)
        return memory_breakdown(layout, entry, microbatches)

    def offload_memory(
        self, layout: ParallelLayout, global_batch: int, seq_len: int, offload: OffloadSpec
    ) -> tuple[MemoryBreakdown, TierMemory]:
        """(HBM bytes by kind, bytes on the offload tier) per GPU, for pruning offloaded layouts.

        Raises ``FabricsimError`` for an invalid layout or a tier the system lacks.
        """
        microbatches = self.microbatches(layout, global_batch, seq_len)
        entry = self.stage(layout, seq_len)
        base = memory_breakdown(layout, entry, microbatches)
        return offload_memory(layout, entry, base, microbatches, (offload, self.tier(offload)))

    def fitting_offloads(
        self,
        layout: ParallelLayout,
        base: MemoryBreakdown,
        global_batch: int,
        seq_len: int,
        choices: Offloads,
        entry: StageEntry | None = None,
    ) -> list[tuple[OffloadSpec, float]]:
        """(choice, HBM bytes) for the ``choices`` (grouped by tier) with which ``layout`` fits in HBM
        and on the tier: the planner's memory check of offload variants. ``layout`` was checked and
        sized by :meth:`memory` (``base``); each class's shift is computed once and summed per choice.
        ``entry``: the layout's :meth:`stage` when the caller has it."""
        microbatches = global_batch // (layout.data_parallel * layout.micro_batch_size)
        entry = entry or self.stage(layout, seq_len)
        states = (base.weights, base.gradients, base.optimizer_states)
        shifts = (*state_shifts(layout, entry, states, microbatches), activation_shift(entry, base.activations))
        return self.fitting_choices(shifts, base.total, choices)

    def fitting_choices(
        self, shifts: tuple[ClassShift, ClassShift, ClassShift], total: float, choices: Offloads
    ) -> list[tuple[OffloadSpec, float]]:
        """:meth:`fitting_offloads` from a layout's HBM bytes without offload (``total``) and its
        class shifts (:func:`~fabricsim.transformer.memory_tiers.class_shifts`): each choice's bytes
        are the sums of its classes' shifts."""
        over = total - self.system.device.hbm_capacity_bytes
        if over > sum(shift.hbm_freed for shift in shifts):
            return []  # offloading everything does not fit in HBM: no choice does
        fitting = []
        for capacity, group in self._offload_plan(choices):
            for choice, indices in group:
                freed = tier_bytes = 0.0
                for index in indices:
                    freed += shifts[index].hbm_freed
                    tier_bytes += shifts[index].tier_bytes
                if freed >= over and tier_bytes <= capacity:
                    fitting.append((choice, total - freed))
        return fitting

    def _offload_plan(self, choices: Offloads) -> tuple[tuple[float, tuple], ...]:
        """Per tier group of ``choices``: (the tier's capacity per GPU, each choice with its classes'
        positions), prepared once per ``choices`` object (a search passes the same one every time)."""
        hit = self._offload_plans.get(id(choices))
        if hit is None or hit[0] is not choices:
            plan = tuple(
                (self.tier(group[0]).capacity_per_gpu_bytes, tuple((c, _class_indices(c)) for c in group))
                for group in choices
            )
            hit = self._offload_plans[id(choices)] = (choices, plan)
        return hit[1]

    def tier(self, offload: OffloadSpec) -> MemoryTierSpec:
        return self.system.memory_tier(offload.tier)

    def estimate(
        self, layout: ParallelLayout, global_batch: int, seq_len: int, offload: OffloadSpec | None = None
    ) -> TrainingEstimate:
        """Analytic estimate of one training step (see :func:`estimate_training`); the hot path.
        ``offload``: tensor classes kept on a memory tier below HBM (:mod:`.offload`)."""
        microbatches = self.microbatches(layout, global_batch, seq_len)
        entry = self.stage(layout, seq_len)
        placed = self.placed_stage(layout, entry)
        time, total = step_time(layout, entry.work, placed, microbatches)
        memory = memory_breakdown(layout, entry, microbatches, placed.states)
        tier = None
        if offload is not None:
            on_tier = (offload, self.tier(offload))
            memory, tier = offload_memory(layout, entry, memory, microbatches, on_tier)
            cost = offload_time(layout, entry, microbatches, on_tier, self.options.overlap_grad_reduce)
            optimizer = time.optimizer_s if cost.optimizer_s is None else cost.optimizer_s
            time = time._replace(optimizer_s=optimizer, offload_s=cost.exposed_s)
            total = time.total_s
        model_flops, hardware_flops = self.flops(global_batch, seq_len, layout.recompute)
        return new_training_estimate((  # every field, in order
            layout,
            global_batch,
            seq_len,
            microbatches,
            total,  # step_time_s
            model_flops,
            hardware_flops,
            self.peak_flops(layout.dtype),
            time,
            memory,
            self._hbm_bytes,  # memory_capacity_bytes
            tier,
        ))


Offloads = tuple[tuple[OffloadSpec, ...], ...]  # offload choices grouped by tier


@lru_cache(maxsize=64)
def _class_indices(choice: OffloadSpec) -> tuple[int, ...]:
    """Positions of ``choice``'s classes in OFFLOAD_ORDER (a pure function of a value: cached)."""
    return tuple(OFFLOAD_ORDER.index(kind) for kind in choice.classes)


_DEFAULT_OPTIONS = TrainingOptions()


def training_context(model: ModelSpec, system: SystemSpec, options: TrainingOptions | None = None) -> TrainingContext:
    """A new :class:`TrainingContext` of (model, system, options), owned by the caller.

    A sweep builds one and calls :meth:`TrainingContext.estimate` / :meth:`TrainingContext.memory`
    per layout (~2 µs of CPU each once its caches are warm, CPython 3.11, 2026-12).
    """
    return TrainingContext(model, system, options or _DEFAULT_OPTIONS)


def resolve_layout(gpus: int, model: ModelSpec, **given: object) -> ParallelLayout:
    """A layout with defaults for the unset fields (see :func:`fabricsim.workload.training.resolve_layout`)."""
    return work.resolve_layout(gpus, model_dims(model), **given)


def check_layout(model: ModelSpec | ModelDims, layout: ParallelLayout, global_batch: int, seq_len: int) -> int:
    """Raise ``FabricsimError`` (naming the field) unless the layout can run; return micro-batches per step."""
    dims = model if isinstance(model, ModelDims) else model_dims(model)
    return work.check_layout(dims, layout, layout.gpus, global_batch, seq_len)


def _stage_key(layout: ParallelLayout, seq_len: int) -> tuple:
    """What a stage entry depends on of the layout: the per-GPU shape and the pipeline depth."""
    return (
        layout.tensor_parallel,
        layout.pipeline_parallel,
        layout.context_parallel,
        layout.expert_parallel,
        layout.micro_batch_size,
        layout.sequence_parallel,
        layout.recompute,
        layout.dtype,
        seq_len,
        layout.expert_tensor_parallel,
    )


def _stage_memory(ctx: TrainingContext, layout: ParallelLayout, shape: ShardShape) -> StageMemory:
    dims = ctx.dims
    mtp, accounting = ctx.options.mtp_layers, ctx.options.pipeline_accounting
    stage = ctx.pipeline_stages(layout.pipeline_parallel)[0]
    modules = ctx.options.selective_modules
    per_microbatch, logits, working = stage_activations(dims, layout, shape, mtp, accounting, modules, stage)
    dense, expert = stage_parameters(dims, layout, mtp, accounting, stage)
    rank = work.check_lora(dims, ctx.options.lora_rank)
    trainable = work.lora_stage_parameters(dims, stage, layout.tensor_parallel, rank) if rank else None
    return StageMemory(
        dense_params=dense,
        expert_params=expert,
        layers=stage.layers,
        activation_per_microbatch=per_microbatch,
        logits_activation=logits,
        recompute_working=working,
        gradient_bytes=ctx.options.gradient_bytes(layout.dtype),
        trainable_params=trainable,
    )


def _stage_entry(ctx: TrainingContext, layout: ParallelLayout, seq_len: int) -> StageEntry:
    shape = shard_shape(ctx, layout, seq_len)
    sizes = stage_comm_sizes(ctx, layout, seq_len)
    stages = ctx.pipeline_stages(layout.pipeline_parallel)
    memory = ctx.stage_memory(layout, seq_len, shape)
    return StageEntry(
        work=stage_work(ctx, layout, seq_len, shape, sizes, stages),
        dense_params=memory.dense_params,
        expert_params=memory.expert_params,
        layers=memory.layers,
        activation_per_microbatch=memory.activation_per_microbatch,
        logits_activation=memory.logits_activation,
        recompute_working=memory.recompute_working,
        p2p_bytes=sizes.pipeline_bytes,  # the capacity factor (in sizes) changes the expert bytes only
        gradient_bytes=memory.gradient_bytes,
        trainable_params=memory.trainable_params,
    )


def training_memory(
    model: ModelSpec,
    system: SystemSpec,
    layout: ParallelLayout,
    global_batch: int,
    seq_len: int,
    options: TrainingOptions | None = None,
) -> MemoryBreakdown:
    """Memory per GPU only (bytes by kind) of one layout, with a fresh context (one-off calls;
    a sweep reuses a :func:`training_context` and calls its ``memory``)."""
    return training_context(model, system, options).memory(layout, global_batch, seq_len)


def estimate_training(
    model: ModelSpec,
    system: SystemSpec,
    layout: ParallelLayout,
    global_batch: int,
    seq_len: int,
    options: TrainingOptions | None = None,
    offload: OffloadSpec | None = None,
) -> TrainingEstimate:
    """Analytic estimate of one training step (no I/O, no catalog look-ups), with a fresh context.

    Raises ``FabricsimError`` for an invalid layout; a layout that does not fit in memory is a
    result with ``fits`` False. One-off calls pay for the context's cold caches (~0.1-1 ms); a
    sweep reuses one :func:`training_context` and calls its ``estimate`` (~2 µs per layout).
    """
    return training_context(model, system, options).estimate(layout, global_batch, seq_len, offload)
