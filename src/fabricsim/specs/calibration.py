"""Measured collective timings carried by a calibrated system (layer L1).

``fabricsim calibrate nccl-tests`` fits each measured (op, group) to a few alpha-beta lines
``time = latency_s + S / bandwidth_Bps`` (S is nccl-tests' size), one per regime the log shows
(NCCL switches algorithm and protocol with size). The collective model takes the fastest line, as
NCCL's tuner takes the fastest of its cost table, for a group of exactly ``ranks`` GPUs on
``nodes`` nodes; other groups use the system's (calibrated) link figures.
"""

from typing import Literal

from pydantic import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, model_validator

from fabricsim.specs.base import FrozenSpec

OpName = Literal["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce", "send-recv"]


class FitLine(FrozenSpec):
    """One regime: ``latency_s`` + S / ``bandwidth_Bps`` (algbw asymptote, bytes/s), fitted on
    the log rows with ``min_bytes`` <= S <= ``max_bytes``."""

    latency_s: NonNegativeFloat
    bandwidth_Bps: PositiveFloat
    min_bytes: NonNegativeInt
    max_bytes: NonNegativeInt

    def time_s(self, size_bytes: float) -> float:
        return self.latency_s + size_bytes / self.bandwidth_Bps


class CollectiveFit(FrozenSpec):
    """The measured lines of one ``op`` on ``ranks`` GPUs spread over ``nodes`` nodes."""

    op: OpName
    ranks: PositiveInt
    nodes: PositiveInt
    lines: tuple[FitLine, ...]
    measured_sizes_bytes: tuple[PositiveInt, ...] = ()  # the log's rows, so validate can report residuals
    measured_time_s: tuple[PositiveFloat, ...] = ()

    @model_validator(mode="after")
    def _has_lines(self) -> "CollectiveFit":
        if not self.lines:
            raise ValueError("a collective fit needs at least one line")
        if self.nodes > self.ranks:
            raise ValueError("nodes cannot exceed ranks")
        if len(self.measured_sizes_bytes) != len(self.measured_time_s):
            raise ValueError("measured_sizes_bytes and measured_time_s must have the same length")
        return self
