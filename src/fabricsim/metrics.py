"""Immutable results and the JSON contract of DESIGN.md (layer L7).

Each result is a frozen dataclass whose ``to_json()`` gives exactly the keys the contract names,
with units in the key names. Rendering (tables) lives in ``report``; files in ``io``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CollectiveResult:
    """One collective's estimate. ``size_bytes`` follows nccl-tests' definition of S per op."""

    op: str
    gpus: int
    size_bytes: int
    algorithm: str
    protocol: str
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    fidelity: str = "analytic"

    def to_json(self) -> dict[str, object]:
        return {
            "op": self.op,
            "gpus": self.gpus,
            "size_bytes": self.size_bytes,
            "algorithm": self.algorithm,
            "protocol": self.protocol,
            "time_s": self.time_s,
            "algbw_GBps": self.algbw_GBps,
            "busbw_GBps": self.busbw_GBps,
            "fidelity": self.fidelity,
        }


@dataclass(frozen=True, slots=True)
class SweepSummary:
    """One ``fabricsim sweep`` run: tasks in the spec, computed now (ok / failed), already stored."""

    tasks_total: int
    tasks_done: int
    tasks_skipped: int
    tasks_failed: int
    elapsed_s: float
    db: str
    executor: str
    workers: int
    export: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "tasks_total": self.tasks_total,
            "tasks_done": self.tasks_done,
            "tasks_skipped": self.tasks_skipped,
            "tasks_failed": self.tasks_failed,
            "elapsed_s": self.elapsed_s,
            "db": self.db,
            "executor": self.executor,
            "workers": self.workers,
            "export": self.export,
        }
