"""Time collectives with torch.distributed on local ranks (layer L8; needs the ``measure`` extra).

One process per rank (``torch.multiprocessing`` spawn), rendezvous through a file store in a
private temporary folder (no port to collide), gloo over the loopback interface
(``GLOO_SOCKET_IFNAME=lo`` unless set) or NCCL with one GPU per rank. Per size: ``warmup`` calls,
then ``iters`` calls timed together with a barrier before, the mean per call, and the slowest
rank's mean (all-reduce MAX) is kept, which is what bounds a synchronous step. Buffers hold
rank + 1, so every reduced or gathered element is checked (nccl-tests' ``#wrong``).
Note (shared/reference/measurement-formats.md): gloo's reduce-scatter is one all-reduce per rank,
which is why it is not offered.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from pathlib import Path

from fabricsim.errors import FabricsimError
from fabricsim.measure.spec import MeasuredRow, MeasureResult, MeasureSpec


def _torch():
    try:
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
    except ImportError:
        raise FabricsimError("backend", "torch is not installed", "pip install 'fabricsim[measure]'") from None
    return torch, dist, mp


def _expected(spec: MeasureSpec, rank_values: list[float]) -> list[float] | float:
    if spec.op == "all-reduce":
        return sum(rank_values)
    if spec.op == "broadcast":
        return rank_values[0]
    return rank_values


def _call(spec: MeasureSpec, buffers: dict):
    _, dist, _ = _torch()
    if spec.op == "all-reduce":
        dist.all_reduce(buffers["data"])
    elif spec.op == "broadcast":
        dist.broadcast(buffers["data"], src=0)
    else:
        dist.all_gather(buffers["out"], buffers["data"])


def _buffers(spec: MeasureSpec, size_bytes: int, rank: int, device):
    torch, _, _ = _torch()
    data = torch.full((spec.count(size_bytes),), float(rank + 1), dtype=torch.float32, device=device)
    out = [torch.empty_like(data) for _ in range(spec.ranks)] if spec.op == "all-gather" else None
    return {"data": data, "out": out}


def _wrong(spec: MeasureSpec, buffers: dict, rank: int) -> int:
    """Elements that differ from the exact result of one call on fresh buffers."""
    values = [float(r + 1) for r in range(spec.ranks)]
    expected = _expected(spec, values)
    if spec.op == "all-gather":
        return sum(int((buf != expected[r]).sum()) for r, buf in enumerate(buffers["out"]))
    return int((buffers["data"] != expected).sum())


def _timed(spec: MeasureSpec, buffers: dict, sync) -> float:
    _, dist, _ = _torch()
    for _ in range(spec.warmup):
        _call(spec, buffers)
    sync()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(spec.iters):
        _call(spec, buffers)
    sync()
    return (time.perf_counter() - start) / spec.iters


def _sweep(rank: int, spec: MeasureSpec, device, sync) -> list[dict]:
    torch, dist, _ = _torch()
    rows = []
    for size in spec.sizes_bytes:
        buffers = _buffers(spec, size, rank, device)
        _call(spec, buffers)
        sync()
        wrong = torch.tensor([_wrong(spec, buffers, rank)], dtype=torch.float64)
        times = torch.tensor([_timed(spec, buffers, sync), _timed(spec, buffers, sync)], dtype=torch.float64)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        dist.all_reduce(wrong, op=dist.ReduceOp.SUM)
        rows.append(
            {
                "size_bytes": size,
                "count": spec.count(size),
                "time_s": float(times[0]),
                "second_time_s": float(times[1]),
                "wrong": int(wrong[0]),
            }
        )
    return rows


def _worker(rank: int, spec: MeasureSpec, store: str, out: str) -> None:
    torch, dist, _ = _torch()
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group(spec.backend, init_method=f"file://{store}", rank=rank, world_size=spec.ranks)
    try:
        if spec.backend == "nccl":
            torch.cuda.set_device(rank)
            device, sync = torch.device("cuda", rank), torch.cuda.synchronize
        else:
            torch.set_num_threads(1)  # ranks share the CPU; one thread each keeps them from thrashing
            device, sync = torch.device("cpu"), (lambda: None)
        rows = _sweep(rank, spec, device, sync)
        pids: list = [None] * spec.ranks
        dist.all_gather_object(pids, os.getpid())
        name = torch.cuda.get_device_name(rank) if spec.backend == "nccl" else "CPU (gloo)"
        if rank == 0:
            Path(out).write_text(json.dumps({"rows": rows, "device": name, "pids": pids}), encoding="utf-8")
    finally:
        dist.destroy_process_group()


def measure_collective(spec: MeasureSpec) -> MeasureResult:
    """Run ``spec`` on local ranks and return the slowest rank's mean time per size."""
    torch, _, mp = _torch()
    if spec.backend == "nccl" and torch.cuda.device_count() < spec.ranks:
        raise FabricsimError(
            "ranks",
            f"nccl needs one GPU per rank; this machine has {torch.cuda.device_count()}",
            "use --backend gloo or fewer --ranks",
        )
    with tempfile.TemporaryDirectory(prefix="fabricsim-measure-") as folder:
        store, out = os.path.join(folder, "store"), os.path.join(folder, "rows.json")
        mp.spawn(_worker, args=(spec, store, out), nprocs=spec.ranks, join=True)
        data = json.loads(Path(out).read_text(encoding="utf-8"))
    rows = tuple(MeasuredRow(**row) for row in data["rows"])
    return MeasureResult(spec, rows, socket.gethostname(), data["device"], torch.__version__, tuple(data["pids"]))
