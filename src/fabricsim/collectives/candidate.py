"""A costed (algorithm, protocol) option for one collective on one group (layer L4).

Each algorithm module turns (op, group) into a few :class:`Candidate` values whose
``time_s(size_bytes)`` is a closed form of the message size. They are precomputed and cached per
(op, group, algorithm) so that an estimate only evaluates a handful of arithmetic expressions.
Every form is continuous in size (or jumps up), so time grows monotonically with size -- except
CHANNELS (send/recv inside a domain): NCCL doubles a send's channels at size steps, so time may
drop there, by at most the ratio of the channel counts (:mod:`fabricsim.collectives.p2p`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from fabricsim.collectives.nccl import NcclConstants
from fabricsim.collectives.ops import Algorithm, Protocol
from fabricsim.collectives.p2p import ChannelRule


class Shape(IntEnum):
    """How time depends on size: alpha-beta line, NCCL tree correction, ring plateau, NVLS pipeline,
    send/recv over NCCL's channel count."""

    LINEAR = 0
    TREE = 1
    RING_PLATEAU = 2
    PIPELINE = 3
    CHANNELS = 4


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A chunked pipeline of ``stages`` stages (NVLS): a step moves ``chunk`` bytes of S (all
    channels and heads together) at ``s_per_byte`` seconds per byte plus ``step_s`` overhead; the
    best of the allowed chunk sizes is taken (NCCL's ladder picks among the same values)."""

    chunks_bytes: tuple[float, ...]
    stages: int
    step_s: float
    s_per_byte: float

    def time_s(self, size_bytes: float) -> float:
        best = float("inf")
        for chunk in self.chunks_bytes:
            if size_bytes <= chunk:
                t = self.stages * (self.step_s + size_bytes * self.s_per_byte)
            else:
                t = (size_bytes / chunk + self.stages - 1) * (self.step_s + chunk * self.s_per_byte)
            best = min(best, t)
        return best


@dataclass(frozen=True, slots=True)
class Candidate:
    """time = latency + size x s_per_byte, modified by ``shape``:

    * TREE: the bandwidth term is divided by NCCL's treeCorrectionFactor for ``protocol``;
    * RING_PLATEAU: latency x ``plateau_factor`` once size >= ``plateau_bytes`` (NCCL ring Simple);
    * PIPELINE: time = latency + max(pipeline.time_s(size), size x s_per_byte);
    * CHANNELS: time = latency + size x max(s_per_byte, 1 / (n x channel_Bps)), n =
      ``channels.channels(size)`` (NCCL's send/recv channel count, each channel a CTA copying at
      most ``channel_Bps``).
    """

    algorithm: Algorithm
    protocol: Protocol
    shape: Shape
    latency_s: float
    s_per_byte: float
    nccl: NcclConstants | None = None
    plateau_bytes: float = 0.0
    plateau_factor: float = 1.0
    pipeline: Pipeline | None = None
    channels: ChannelRule | None = None
    channel_Bps: float = 0.0

    def time_s(self, size_bytes: float) -> float:
        shape = self.shape
        if shape is Shape.LINEAR:
            return self.latency_s + size_bytes * self.s_per_byte
        if shape is Shape.TREE:
            factor = self.nccl.tree_correction_factor(self.protocol.value, size_bytes)
            return self.latency_s + size_bytes * self.s_per_byte / factor
        if shape is Shape.RING_PLATEAU:
            latency = self.latency_s * self.plateau_factor if size_bytes >= self.plateau_bytes else self.latency_s
            return latency + size_bytes * self.s_per_byte
        if shape is Shape.CHANNELS:
            channel_s_per_byte = 1.0 / (self.channels.channels(size_bytes) * self.channel_Bps)
            return self.latency_s + size_bytes * max(self.s_per_byte, channel_s_per_byte)
        return self.latency_s + max(self.pipeline.time_s(size_bytes), size_bytes * self.s_per_byte)
