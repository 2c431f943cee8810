"""Adapter from the training step's communication to the collective model (layer L6).

The one place the analytic training engine talks to :mod:`fabricsim.collectives`: it places a
group of ``ranks`` GPUs at ``stride`` on the system (rank order: see
:mod:`fabricsim.workload.training`) and asks for the time of one collective of ``size_bytes``
(nccl-tests definition) with NCCL-like automatic algorithm choice. Both are cached per instance,
so a layout sweep pays for each distinct (op, size, group) once.
"""

from __future__ import annotations

from fabricsim import collectives
from fabricsim.collectives import Algorithm, CollectiveOp
from fabricsim.specs import SystemSpec


class CollectiveTimes:
    """Memoised collective times on one system (state: two caches; no I/O)."""

    __slots__ = ("_groups", "_system", "_times")

    def __init__(self, system: SystemSpec) -> None:
        self._system = system
        self._groups: dict[tuple[int, int], object] = {}
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
            group = collectives.place_group(self._system, ranks, stride)
            self._groups[(ranks, stride)] = group
        time_s = collectives.estimate(op, size, group, Algorithm.AUTO).time_s
        self._times[key] = time_s
        return time_s

    def send_recv_s(self, size_bytes: float, stride: int) -> float:
        """Seconds of one point-to-point transfer between GPUs ``stride`` apart."""
        return self.time_s(CollectiveOp.SEND_RECV, size_bytes, 2, stride)
