"""Checkpoint and restart costs on the fabric (layer L8).

The state saved is the model weights and the optimizer states (gradients are rebuilt by the next
step). Three targets, as in the systems that introduced them:

- ``pfs``: synchronous write to a parallel file system; the job blocks for the whole write, which
  runs at the lower of the file system's aggregate bandwidth and each GPU's scale-out NIC share.
- ``host``: two-phase snapshot/persist (CheckFreq, FAST'21): the job blocks only for the copy of
  each GPU's shard to host memory over the host link; the persist to the file system overlaps
  training, and the checkpoint is durable only once it ends.
- ``peers``: in-memory checkpoints in peers' CPU memory (Gemini, SOSP'23): blocking copy to host,
  then an overlapped send of each shard to a peer over the scale-out fabric. Recovery reads from
  the peer, not from the file system.

Recovery from ``pfs`` and ``host`` reads the persisted copy back from the file system (a failed
host has lost its memory). All sizes are bytes, bandwidths bytes/s per direction, times seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fabricsim.errors import FabricsimError


class CheckpointTarget(str, Enum):
    PFS = "pfs"
    HOST = "host"
    PEERS = "peers"


@dataclass(frozen=True, slots=True)
class CheckpointPath:
    """Where a checkpoint goes: ``gpus`` shards of the job's ``state_bytes``, the file system's
    aggregate ``pfs_Bps``, each GPU's ``host_link_Bps`` (GPU to CPU memory) and ``nic_Bps`` (its share
    of the node's scale-out NICs)."""

    state_bytes: float
    gpus: int
    pfs_Bps: float
    host_link_Bps: float
    nic_Bps: float

    def validate(self) -> None:
        for name in ("state_bytes", "pfs_Bps", "host_link_Bps", "nic_Bps"):
            value = getattr(self, name)
            if not (value == value and 0 < value < float("inf")):
                raise FabricsimError(name, f"must be a finite number > 0, got {value!r}")
        if self.gpus < 1:
            raise FabricsimError("gpus", f"must be >= 1, got {self.gpus}")

    @property
    def shard_bytes(self) -> float:
        """Bytes each GPU writes: the unique state spread evenly (fully parallel save)."""
        return self.state_bytes / self.gpus


@dataclass(frozen=True, slots=True)
class CheckpointCost:
    """``blocking_s``: training stalls; ``overlapped_s``: runs behind training until the checkpoint
    is durable; ``load_s``: reading it back on a restart; ``state_bytes``: the job's checkpoint."""

    target: CheckpointTarget
    state_bytes: float
    blocking_s: float
    overlapped_s: float
    load_s: float


def unique_state_bytes(weights_per_gpu: float, optimizer_per_gpu: float, gpus: int, replicas: int, zero: int) -> float:
    """Bytes of one checkpoint of the job from the memory model's per-GPU figures (most loaded GPU,
    so an upper bound over pipeline stages): weights are replicated over the ``replicas`` = dp·cp
    ranks that share them (context-parallel ranks hold the same weights) below ZeRO-3, optimizer
    states below ZeRO-1; one copy of each is saved."""
    weight_copies = replicas if zero < 3 else 1
    optimizer_copies = replicas if zero < 1 else 1
    return gpus * (weights_per_gpu / weight_copies + optimizer_per_gpu / optimizer_copies)


def _file_system_s(path: CheckpointPath) -> float:
    return max(path.state_bytes / path.pfs_Bps, path.shard_bytes / path.nic_Bps)


def checkpoint_cost(path: CheckpointPath, target: CheckpointTarget) -> CheckpointCost:
    """Blocking, overlapped and load seconds of one checkpoint of ``path`` to ``target`` (see module doc)."""
    path.validate()
    snapshot_s = path.shard_bytes / path.host_link_Bps
    if target is CheckpointTarget.PFS:
        write_s = _file_system_s(path)
        return CheckpointCost(target, path.state_bytes, write_s, 0.0, write_s)
    if target is CheckpointTarget.HOST:
        persist_s = _file_system_s(path)
        return CheckpointCost(target, path.state_bytes, snapshot_s, persist_s, persist_s)
    send_s = path.shard_bytes / path.nic_Bps
    return CheckpointCost(target, path.state_bytes, snapshot_s, send_s, send_s + snapshot_s)


@dataclass(frozen=True, slots=True)
class RestartCost:
    """Seconds from a failure to training again, less the checkpoint load: detecting it, getting
    replacement nodes, starting the processes (and NCCL communicators), warming up to full speed."""

    detection_s: float
    reschedule_s: float
    startup_s: float
    warmup_s: float

    def validate(self) -> None:
        for name in ("detection_s", "reschedule_s", "startup_s", "warmup_s"):
            value = getattr(self, name)
            if not (value == value and 0 <= value < float("inf")):
                raise FabricsimError(name.removesuffix("_s"), f"must be a finite number >= 0 s, got {value!r}")

    def total_s(self, load_s: float) -> float:
        return self.detection_s + self.reschedule_s + self.startup_s + load_s + self.warmup_s
