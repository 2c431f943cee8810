"""Analytic training estimates per second on one core (issue 3: target >= 50,000/s).

A planner-like sweep: every (tp, pp, dp, vpp, micro-batch, ZeRO, recompute) layout of
``megatron-1t`` on 3,072 GPUs of ``dgx-h100`` that passes the layout check, through one
``training_context`` as the planner does. Reports the cold rate (first pass with a new context:
every distinct per-layer shape and collective is computed), the warm rate (the planner's steady
state, caches filled) and the one-off rate of ``estimate_training`` (a fresh context per call).
A last warm pass offloads weights, activations and the optimizer to host memory (``train --offload``).
Rates use the process's CPU time (one core; immune to other processes on a loaded machine).
Run: ``taskset -c 0 python benchmarks/bench_training.py``.
"""

from __future__ import annotations

import itertools
import time

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import TrainingContext, estimate_training, training_context
from fabricsim.errors import FabricsimError
from fabricsim.specs import ModelSpec, ParallelLayout, Recompute, SystemSpec
from fabricsim.specs.memory_tier import OffloadSpec, parse_offload

GPUS = 3072
GLOBAL_BATCH = 3072
SEQ_LEN = 2048


def layouts(model_layers: int) -> list[ParallelLayout]:
    found = []
    for tp, pp, vpp, mb, zero, recompute in itertools.product(
        (1, 2, 4, 8), (1, 2, 4, 8, 16, 32, 64), (1, 2), (1, 2, 4), (0, 1, 2, 3), tuple(Recompute)
    ):
        if GPUS % (tp * pp) or (vpp > 1 and pp == 1) or pp * vpp > model_layers:
            continue
        found.append(
            ParallelLayout(
                tensor_parallel=tp,
                pipeline_parallel=pp,
                data_parallel=GPUS // (tp * pp),
                virtual_stages=vpp,
                micro_batch_size=mb,
                zero_stage=zero,
                recompute=recompute,
                sequence_parallel=tp > 1,
            )
        )
    return found


def sweep(
    ctx: TrainingContext, candidates: list[ParallelLayout], offload: OffloadSpec | None = None
) -> tuple[int, float]:
    start = time.process_time()
    done = 0
    for layout in candidates:
        try:
            ctx.estimate(layout, GLOBAL_BATCH, SEQ_LEN, offload)
            done += 1
        except FabricsimError:
            pass
    return done, time.process_time() - start


def main() -> None:
    model, system = load_model("megatron-1t"), load_system("dgx-h100")
    candidates = layouts(model.num_hidden_layers)
    ctx = training_context(model, system)
    done, cold_s = sweep(ctx, candidates)
    rounds, warm_s, warm_done = 20, 0.0, 0
    wall_start = time.perf_counter()
    for _ in range(rounds):
        n, elapsed = sweep(ctx, candidates)
        warm_done += n
        warm_s += elapsed
    wall_s = time.perf_counter() - wall_start
    print(f"layouts tried: {len(candidates)}, valid: {done}")
    print(f"cold (first pass, empty caches): {len(candidates) / cold_s:,.0f} layouts/s")
    print(
        f"warm (caches filled):            {len(candidates) * rounds / warm_s:,.0f} layouts/s "
        f"({warm_done / warm_s:,.0f} valid estimates/s, {warm_s / (len(candidates) * rounds) * 1e6:.1f} µs each)"
    )
    print(f"warm, wall clock (counts time other processes take from this core): {warm_done / wall_s:,.0f} valid/s")
    everything = parse_offload("optimizer,weights,activations", "host")
    offloaded, offload_s = sweep(ctx, candidates * 5, everything)
    print(f"warm, weights+activations+optimizer offloaded to host: {offloaded / offload_s:,.0f} valid estimates/s")
    one_off, one_off_s = one_off_rate(model, system, candidates[::20])
    print(f"one-off estimate_training (fresh context each call): {one_off / one_off_s:,.0f} valid/s")


def one_off_rate(model: ModelSpec, system: SystemSpec, candidates: list[ParallelLayout]) -> tuple[int, float]:
    start = time.process_time()
    done = 0
    for layout in candidates:
        try:
            estimate_training(model, system, layout, GLOBAL_BATCH, SEQ_LEN)
            done += 1
        except FabricsimError:
            pass
    return done, time.process_time() - start


if __name__ == "__main__":
    main()
