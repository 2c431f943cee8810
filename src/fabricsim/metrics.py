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
