"""Memoised collective times on one system, for the step models above (layer L4).

The one cache between the analytic step models (training: :mod:`fabricsim.engine.training.analytic`;
inference: :mod:`fabricsim.engine.inference.step`) and
:func:`fabricsim.collectives.estimate`: it places a group of ``ranks`` GPUs at ``stride`` on the
system and asks for one collective of ``size_bytes`` (nccl-tests definition, rounded to whole bytes)
with NCCL-like automatic algorithm choice. Groups and times are cached per instance, so a layout
sweep or a serving simulation pays for each distinct (op, size, group) once.
"""

from __future__ import annotations

from fabricsim.collectives.model import estimate
from fabricsim.collectives.ops import Algorithm, CollectiveOp
from fabricsim.collectives.placement import Group, place_group
from fabricsim.specs import SystemSpec

__all__ = ["CollectiveTimes"]


class CollectiveTimes:
    """Memoised collective times on one system (state: two caches; no I/O)."""

    __slots__ = ("_groups", "_system", "_times")

    def __init__(self, system: SystemSpec) -> None:
        self._system = system
        self._groups: dict[tuple[int, int], Group] = {}
        self._times: dict[tuple[CollectiveOp, int, int, int], float] = {}

    def time_s(self, op: CollectiveOp, size_bytes: float, ranks: int, stride: int) -> float:
        """Seconds of one ``op`` of ``size_bytes`` over ``ranks`` GPUs spaced ``stride`` apart."""
        if ranks <= 1 or size_bytes <= 0.0:
            return 0.0
        size = int(size_bytes + 0.5)
        key = (op, size, ranks, stride)
        cached = self._times.get(key)
        if cached is not None:
            return cached
        group = self._groups.get((ranks, stride))
        if group is None:
            group = place_group(self._system, ranks, stride)
            self._groups[(ranks, stride)] = group
        time_s = float(estimate(op, size, group, Algorithm.AUTO).time_s)
        self._times[key] = time_s
        return time_s

    def send_recv_s(self, size_bytes: float, stride: int) -> float:
        """Seconds of one point-to-point transfer between GPUs ``stride`` apart."""
        return self.time_s(CollectiveOp.SEND_RECV, size_bytes, 2, stride)
