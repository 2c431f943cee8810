"""A shared CXL memory pool that holds the KV a serving replica evicts from HBM (layer L6).

Without a pool, a replica whose KV cache overflows preempts its newest request and later recomputes
its prompt (vLLM's default ``recompute`` preemption; :mod:`fabricsim.engine.inference.scheduler`).
With a pool (``fabricsim serve --kv-pool``), the evicted KV -- a decoding sequence's whole context,
or the part of a prompt already prefilled -- is written to the pool while the deployment's share of
its capacity has room, and fetched back when the request is re-admitted, which then resumes where it
stopped (vLLM's ``swap`` preemption, with the CXL pool in place of host memory). A request the pool
cannot hold is recomputed as without a pool.

Time. A transfer moves the KV shard of every GPU that holds the request's tokens (the tensor- and
pipeline-parallel GPUs of its attention rank), all in parallel, each at

    rate = min(port bandwidth, pool bandwidth / active sharers)

and takes ``latency_s + bytes per GPU / rate``. The pool's bandwidth (the lesser of its ports and its
own DRAM, per direction) is split equally among the GPUs moving data at that moment -- processor
sharing (an assumption: how a CXL switch arbitrates among its ports is vendor-specific, and no
published pool measurement gives per-host shares under contention) -- and no share exceeds one port.
Active sharers are the deployment's GPUs with a transfer in flight (this one included) times
``sharing / deployment GPUs``: the pool's other GPUs are not simulated and are assumed as busy as
the deployment's (a mean-field assumption), so declaring twice the sharers halves the share under
contention. A transfer's rate is fixed when it starts (it does not speed up when others finish:
conservative). The deployment's capacity is its share, ``capacity x deployment / sharing`` GPUs.

Stalls. vLLM issues swap-out and swap-in copies before the step's model pass runs (v0 worker
``execute_worker``: ``cache_engine.swap_out``/``swap_in`` ahead of ``model_runner.execute_model``), so
a write delays the evicting replica's next step and a fetch the step that re-admits the request.

Hit rate is re-admissions served from the pool over re-admissions of requests preempted with KV
(a prompt preempted before any chunk ran has nothing to keep and is not counted).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from fabricsim.specs.memory_tier import KvPoolSpec


@dataclass(frozen=True, slots=True)
class PoolConfig:
    """A pool as one deployment sees it: its share of the capacity (bytes), the bandwidths (bytes/s
    per direction), ``contention`` = sharing GPUs / deployment GPUs, and a request's KV layout:
    ``bytes_per_token_per_gpu`` on each of ``transfer_gpus`` GPUs."""

    capacity_bytes: float
    port_bandwidth_Bps: float
    shared_bandwidth_Bps: float
    latency_s: float
    contention: float
    bytes_per_token_per_gpu: float
    transfer_gpus: int


def pool_config(
    spec: KvPoolSpec, gpus: tuple[int, int], bytes_per_token_per_gpu: float, transfer_gpus: int
) -> PoolConfig:
    """``gpus`` = (GPUs sharing the pool, GPUs of the deployment); sharing >= deployment."""
    sharing, deployment = gpus
    return PoolConfig(
        capacity_bytes=spec.capacity_bytes * deployment / sharing,
        port_bandwidth_Bps=spec.port_bandwidth_Bps,
        shared_bandwidth_Bps=spec.shared_bandwidth_Bps,
        latency_s=spec.latency_s,
        contention=sharing / deployment,
        bytes_per_token_per_gpu=bytes_per_token_per_gpu,
        transfer_gpus=transfer_gpus,
    )


class KvPool:
    """The pool's state during one serving run: which requests' KV it holds, what is in flight, and
    the counts of the ``kv_pool`` report. Shared by every replica of the deployment."""

    def __init__(self, config: PoolConfig) -> None:
        self.cfg = config
        self.stored: dict[int, int] = {}  # request -> KV tokens held
        self.refused: set[int] = set()  # preempted with KV, not held: recomputed on re-admission
        self.in_flight: list[float] = []  # end times (s) of transfers, each on transfer_gpus GPUs
        self.used_bytes = self.bytes_moved = self.stall_s = 0.0
        self.hits = self.readmissions = 0

    def _bytes(self, tokens: int) -> float:
        return tokens * self.cfg.bytes_per_token_per_gpu * self.cfg.transfer_gpus

    def evict(self, rid: int, tokens: int, start_s: float) -> float | None:
        """Write ``tokens`` tokens of KV of request ``rid`` starting at ``start_s``: the seconds it
        takes, or None when the deployment's share of the pool has no room (recompute)."""
        size = self._bytes(tokens)
        if self.used_bytes + size > self.cfg.capacity_bytes:
            self.refused.add(rid)
            return None
        self.stored[rid] = tokens
        self.used_bytes += size
        return self._transfer(tokens, start_s)

    def readmit(self, rid: int, start_s: float) -> tuple[int, float] | None:
        """Request ``rid`` is admitted again at ``start_s``: (KV tokens fetched back, seconds), or
        None when the pool holds none of its KV."""
        tokens = self.stored.pop(rid, None)
        if tokens is None:
            if rid in self.refused:
                self.refused.discard(rid)
                self.readmissions += 1
            return None
        self.readmissions += 1
        self.hits += 1
        self.used_bytes -= self._bytes(tokens)
        return tokens, self._transfer(tokens, start_s)

    def _transfer(self, tokens: int, start_s: float) -> float:
        """Seconds of one transfer starting at ``start_s`` at its fair share (module docstring)."""
        cfg, busy = self.cfg, self.in_flight
        while busy and busy[0] <= start_s:
            heapq.heappop(busy)
        sharers = (len(busy) + 1) * cfg.transfer_gpus * cfg.contention
        rate = min(cfg.port_bandwidth_Bps, cfg.shared_bandwidth_Bps / sharers)
        seconds = cfg.latency_s + tokens * cfg.bytes_per_token_per_gpu / rate
        heapq.heappush(busy, start_s + seconds)
        self.bytes_moved += self._bytes(tokens)
        self.stall_s += seconds
        return seconds

    def report(self) -> dict[str, float]:
        """The ``kv_pool`` JSON block (hit rate NaN when nothing was re-admitted)."""
        return {
            "capacity_bytes": self.cfg.capacity_bytes,
            "hit_rate": self.hits / self.readmissions if self.readmissions else math.nan,
            "readmissions": self.readmissions,
            "bytes_moved": self.bytes_moved,
            "stall_s": self.stall_s,
        }
