"""What to measure and what came out (layer L8), independent of torch."""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.errors import FabricsimError

BACKENDS = ("gloo", "nccl")
OPS = ("all-reduce", "all-gather", "broadcast")  # what torch.distributed runs as the nccl-tests op
MAX_RANKS = 64
MAX_SIZE_BYTES = 2**32
MAX_ITERS = 10_000
DTYPE_BYTES = 4  # float32, as nccl-tests' default


@dataclass(frozen=True, slots=True)
class MeasureSpec:
    """A sweep: ``op`` on ``ranks`` local processes with ``backend``, each size (nccl-tests' S,
    bytes) timed over ``iters`` calls after ``warmup`` calls."""

    op: str
    backend: str
    ranks: int
    sizes_bytes: tuple[int, ...]
    iters: int = 20
    warmup: int = 5

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise FabricsimError("backend", f"unknown backend {self.backend!r}", "use gloo (CPU) or nccl (GPUs)")
        if self.op not in OPS:
            raise FabricsimError("op", f"{self.op} is not measured here", f"use one of: {', '.join(OPS)}")
        if not 2 <= self.ranks <= MAX_RANKS:
            raise FabricsimError("ranks", f"must be in [2, {MAX_RANKS}], got {self.ranks}", "e.g. --ranks 4")
        if not 1 <= self.iters <= MAX_ITERS or not 0 <= self.warmup <= MAX_ITERS:
            raise FabricsimError("iters", f"iters in [1, {MAX_ITERS}] and warmup in [0, {MAX_ITERS}]")
        if not self.sizes_bytes:
            raise FabricsimError("sizes", "no size given", "e.g. --sizes 1KiB,1MiB or --min-bytes/--max-bytes")
        quantum = DTYPE_BYTES * (self.ranks if self.op == "all-gather" else 1)
        for size in self.sizes_bytes:
            if size <= 0 or size > MAX_SIZE_BYTES or size % quantum:
                raise FabricsimError(
                    "sizes",
                    f"{size} B is not a positive multiple of {quantum} B up to {MAX_SIZE_BYTES} B",
                    f"{self.op} on {self.ranks} ranks moves float32 elements",
                )

    def count(self, size_bytes: int) -> int:
        """nccl-tests' count column: elements per rank buffer (all-gather: S / n / 4)."""
        per_rank = size_bytes // self.ranks if self.op == "all-gather" else size_bytes
        return per_rank // DTYPE_BYTES


@dataclass(frozen=True, slots=True)
class MeasuredRow:
    """One size: mean time per call (s) of the slowest rank, for two independent loops (torch's
    collectives are in place, so both columns are in-place runs), and wrong elements seen."""

    size_bytes: int
    count: int
    time_s: float
    second_time_s: float
    wrong: int


@dataclass(frozen=True, slots=True)
class MeasureResult:
    spec: MeasureSpec
    rows: tuple[MeasuredRow, ...]
    host: str
    device: str
    torch_version: str
    pids: tuple[int, ...] = ()
