"""Result and intermediate types of the analytic training step (layer L6).

:class:`TimeBreakdown`, :class:`MemoryBreakdown` and :class:`TrainingEstimate` are immutable named
tuples (cheaper to build than frozen dataclasses on the planner's hot path); :class:`StageWork`
and :class:`StageEntry` are cached per per-GPU shape by :mod:`fabricsim.engine.training.analytic`,
:class:`PlacedStage` per stage entry, data-parallel size and ZeRO stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

from fabricsim.specs import ParallelLayout
from fabricsim.specs.memory_tier import OffloadSpec
from fabricsim.transformer.memory_tiers import TierBytes


class TimeBreakdown(NamedTuple):
    """Seconds of one step by cause; the fields add up to the step time."""

    forward_compute_s: float
    backward_compute_s: float
    recompute_s: float
    tp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    pp_comm_s: float
    pipeline_bubble_s: float
    dp_comm_s: float
    optimizer_s: float
    offload_s: float = 0.0  # exposed transfers to and from a memory tier (train --offload)

    @property
    def total_s(self) -> float:
        return (
            self.forward_compute_s
            + self.backward_compute_s
            + self.recompute_s
            + self.tp_comm_s
            + self.cp_comm_s
            + self.ep_comm_s
            + self.pp_comm_s
            + self.pipeline_bubble_s
            + self.dp_comm_s
            + self.optimizer_s
            + self.offload_s
        )

    def as_dict(self) -> dict[str, float]:
        return self._asdict()


class MemoryBreakdown(NamedTuple):
    """Bytes on the most loaded GPU by kind."""

    weights: float
    gradients: float
    optimizer_states: float
    activations: float
    framework: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer_states + self.activations + self.framework

    def as_dict(self) -> dict[str, float]:
        return self._asdict()


class TierMemory(NamedTuple):
    """What a layout offloads, the bytes it puts on that tier per GPU and the tier's capacity per GPU."""

    offload: OffloadSpec
    bytes: TierBytes
    capacity_bytes: float

    @property
    def fits(self) -> bool:
        return self.bytes.total <= self.capacity_bytes


class TrainingEstimate(NamedTuple):
    """Everything the analytic engine predicts for one (model, system, layout, batch, sequence)."""

    layout: ParallelLayout
    global_batch: int
    seq_len: int
    microbatches: int
    step_time_s: float
    model_flops: float
    hardware_flops: float
    peak_flops_per_gpu: float
    time: TimeBreakdown
    memory: MemoryBreakdown
    memory_capacity_bytes: float
    tier: TierMemory | None = None  # the memory tier below HBM, when something is offloaded

    @property
    def gpus(self) -> int:
        return self.layout.gpus

    @property
    def tokens_per_s(self) -> float:
        return self.global_batch * self.seq_len / self.step_time_s

    @property
    def model_flops_per_gpu_s(self) -> float:
        return self.model_flops / (self.gpus * self.step_time_s)

    @property
    def hardware_flops_per_gpu_s(self) -> float:
        return self.hardware_flops / (self.gpus * self.step_time_s)

    @property
    def mfu(self) -> float:
        return self.model_flops_per_gpu_s / self.peak_flops_per_gpu

    @property
    def hfu(self) -> float:
        return self.hardware_flops_per_gpu_s / self.peak_flops_per_gpu

    @property
    def memory_per_gpu_bytes(self) -> float:
        return self.memory.total

    @property
    def fits(self) -> bool:
        return not self.overflow_tiers

    @property
    def overflow_tiers(self) -> tuple[str, ...]:
        """Tiers whose capacity the layout exceeds: ``hbm`` and/or the offload tier's name."""
        over = ("hbm",) if self.memory.total > self.memory_capacity_bytes else ()
        if self.tier is not None and not self.tier.fits:
            over += (self.tier.offload.tier.value,)
        return over


# Builders of the three result tuples from a tuple of ALL their fields in field order (defaults
# too), for the analytic estimate's hot path: a named tuple's ``__new__`` is generated Python code,
# one frame per build and about half of the ~0.26 us a build costs on CPython 3.11, and every
# estimate builds three; ``tuple.__new__`` builds the same object without that frame.
new_time_breakdown = partial(tuple.__new__, TimeBreakdown)
new_memory_breakdown = partial(tuple.__new__, MemoryBreakdown)
new_training_estimate = partial(tuple.__new__, TrainingEstimate)


@dataclass(frozen=True, slots=True)
class StageWork:
    """Per-micro-batch seconds of the slowest stage (forward, backward, recompute, exposed comm)."""

    forward_s: float
    backward_s: float
    recompute_s: float
    tp_comm_s: float
    cp_comm_s: float
    ep_comm_s: float
    ep_unpaired_s: float = 0.0  # more EP exposed when a micro-batch's steps run unpaired (A2A overlap)


@dataclass(frozen=True, slots=True)
class StageMemory:
    """Per-shape quantities of the slowest stage that sizing its memory reads (independent of dp, vpp,
    ZeRO and the batch), cached apart from its work so that a planner can size a layout whose time
    bound already loses without timing its stage (:meth:`TrainingContext.stage_memory`)."""

    dense_params: float
    expert_params: float
    layers: int
    activation_per_microbatch: float
    logits_activation: float
    recompute_working: float
    gradient_bytes: float = 4.0  # per parameter: fp32 or 16-bit (TrainingOptions.gradient_bytes)
    trainable_params: float | None = None  # LoRA: the adapters' (dense) parameters; None: every parameter trains

    @property
    def trained(self) -> tuple[float, float]:
        """(dense, expert) parameters with gradients and optimizer state: all of them, or (LoRA) the adapters."""
        if self.trainable_params is None:
            return self.dense_params, self.expert_params
        return self.trainable_params, 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class StageEntry(StageMemory):
    """A :class:`StageMemory` with the stage's work and its pipeline hand-off bytes."""

    work: StageWork
    p2p_bytes: float


@dataclass(frozen=True, slots=True)
class PlacedStage:
    """What a step reads of a :class:`StageEntry` placed on a data-parallel size and a ZeRO stage:
    the figures that depend on neither the virtual stages nor the micro-batch count, so that an
    estimate only scales them by its micro-batches (:meth:`TrainingContext.placed_stage`)."""

    dp_exposed_s: float  # exposed data-parallel reduction and ZeRO gathers, per step
    zero3_s: float  # exposed ZeRO-3 weight gathers, per micro-batch
    optimizer_s: float  # the optimizer step
    p2p_s: float  # one pipeline send/recv of a micro-batch's activations (0.0 without pipelining)
    bubble_unit_s: float  # one micro-batch's time on the slowest stage, ZeRO-3 gathers included: the bubble's unit
    states: tuple[float, float, float]  # (weights, gradients, optimizer state) bytes after ZeRO sharding
