"""Training steps: analytic and simulated (public API, layer L9)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fabricsim import catalog
from fabricsim.api.cost import attach_train
from fabricsim.cost.energy import retime_train_energy
from fabricsim.engine.flow_timer import flow_timers
from fabricsim.engine.training import analytic
from fabricsim.engine.training.simulate import TrainingCase, TrainingSimulation, simulate_training, step_breakdown
from fabricsim.engine.variability import Variability
from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.metrics import (
    SimulatedTrainResult,
    TrainResult,
)
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.specs.memory_tier import parse_offload


def train(
    model: str,
    system: str,
    gpus: int,
    global_batch: int,
    seq_len: int,
    *,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    cp: int | None = None,
    ep: int | None = None,
    vpp: int | None = None,
    micro_batch: int | None = None,
    zero: int | None = None,
    recompute: str | None = None,
    sequence_parallel: bool | None = None,
    dtype: str | None = None,
    offload: str | list[str] | None = None,
    offload_tier: str | None = None,
) -> TrainResult:
    """Estimate one training step of ``model`` on ``gpus`` GPUs of ``system`` (analytic fidelity).

    ``offload`` (``"optimizer,weights,activations"`` or a list) keeps those tensor classes on the
    memory tier ``offload_tier`` (``host`` default, ``grace``, ``cxl``: one the system YAML lists
    under ``memory_tiers``); the exposed transfers are ``time_breakdown_s.offload_s``.

    Unset layout fields get defaults (see ``fabricsim.workload.training.resolve_layout``: dp =
    gpus/(tp·pp·cp), micro-batch 1, no interleaving, ZeRO 1 for MoE else 0, no recomputation,
    sequence parallelism when tp > 1, bf16). Invalid layouts raise FabricsimError naming the field;
    a layout that does not fit is a result with ``fits`` False.
    """
    model_spec = catalog.load_model(model)
    system_spec = catalog.load_system(system)
    system_spec.check_gpu_count(gpus)
    for field, value in (("global-batch", global_batch), ("seq-len", seq_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise FabricsimError(field, f"must be a positive integer, got {value!r}")
    layout = analytic.resolve_layout(
        gpus,
        model_spec,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        data_parallel=dp,
        context_parallel=cp,
        expert_parallel=ep,
        virtual_stages=vpp,
        micro_batch_size=micro_batch,
        zero_stage=zero,
        recompute=recompute,
        sequence_parallel=sequence_parallel,
        dtype=dtype,
    )
    placement = parse_offload(offload, offload_tier)
    if placement is not None:
        system_spec.memory_tier(placement.tier)
    estimate = analytic.estimate_training(model_spec, system_spec, layout, global_batch, seq_len, offload=placement)
    return attach_train(train_result(model_spec.name, system_spec.name, estimate), system_spec)


def train_result(model: str, system: str, estimate: analytic.TrainingEstimate) -> TrainResult:
    """The ``train`` JSON contract of one analytic estimate."""
    return TrainResult(
        model=model,
        system=system,
        gpus=estimate.gpus,
        global_batch=estimate.global_batch,
        seq_len=estimate.seq_len,
        microbatches=estimate.microbatches,
        step_time_s=estimate.step_time_s,
        tokens_per_s=estimate.tokens_per_s,
        model_tflops_per_gpu=estimate.model_flops_per_gpu_s / 1e12,
        hardware_tflops_per_gpu=estimate.hardware_flops_per_gpu_s / 1e12,
        mfu=estimate.mfu,
        hfu=estimate.hfu,
        fits=estimate.fits,
        memory_per_gpu_bytes=estimate.memory_per_gpu_bytes,
        memory_capacity_bytes=estimate.memory_capacity_bytes,
        memory_breakdown_bytes=tuple(estimate.memory.as_dict().items()),
        time_breakdown_s=tuple(estimate.time.as_dict().items()),
        layout=tuple(estimate.layout.as_dict().items()) + _offload_layout(estimate.tier),
        tiers=_tiers_json(estimate),
    )


def _offload_layout(tier: analytic.TierMemory | None) -> tuple[tuple[str, object], ...]:
    """``offload`` (classes) and ``offload_tier`` layout keys of an offloaded estimate."""
    return () if tier is None else tuple(tier.offload.as_dict().items())


def _tiers_json(estimate: analytic.TrainingEstimate) -> tuple[tuple[str, object], ...]:
    """Per-tier memory keys of an offloaded estimate (none without offload)."""
    tier = estimate.tier
    if tier is None:
        return ()
    name = tier.offload.tier.value
    return (
        ("memory_breakdown_bytes_by_tier", {"hbm": estimate.memory.as_dict(), name: tier.bytes.as_dict()}),
        ("memory_capacity_bytes_by_tier", {"hbm": estimate.memory_capacity_bytes, name: tier.capacity_bytes}),
        ("memory_overflow_tiers", list(estimate.overflow_tiers)),
    )


FIDELITIES = ("analytic", "simulate", "flow")


def _layout_from_json(layout: dict[str, object]) -> ParallelLayout:
    """The inverse of ``ParallelLayout.as_dict`` (short CLI names back to the spec)."""
    return ParallelLayout(
        tensor_parallel=int(layout["tp"]),  # type: ignore[arg-type]
        pipeline_parallel=int(layout["pp"]),  # type: ignore[arg-type]
        data_parallel=int(layout["dp"]),  # type: ignore[arg-type]
        context_parallel=int(layout["cp"]),  # type: ignore[arg-type]
        expert_parallel=int(layout["ep"]),  # type: ignore[arg-type]
        virtual_stages=int(layout["vpp"]),  # type: ignore[arg-type]
        micro_batch_size=int(layout["micro_batch"]),  # type: ignore[arg-type]
        zero_stage=int(layout["zero"]),  # type: ignore[arg-type]
        recompute=Recompute(layout["recompute"]),
        sequence_parallel=bool(layout["sequence_parallel"]),
        dtype=str(layout["dtype"]),
    )


def simulate_train(
    model: str,
    system: str,
    gpus: int,
    global_batch: int,
    seq_len: int,
    *,
    fidelity: str = "simulate",
    variability: Variability | None = None,
    **layout: Any,
) -> SimulatedTrainResult:
    """One training step through the event-driven engine; same inputs as :func:`train`.

    ``fidelity`` is ``simulate`` (collectives timed by the analytic collective model on an
    uncontended fabric) or ``flow`` (timed by the flow-level network model on the system's
    topology, every group of a kind communicating at once, ECMP routing). ``variability`` adds
    seeded stragglers, jitter and ECMP re-hashing and gives P50/P99 step times.
    ``layout`` takes :func:`train`'s keywords (tp, pp, dp, ...).
    """
    if fidelity not in ("simulate", "flow"):
        raise unknown_name("fidelity", fidelity, ("simulate", "flow"))
    if layout.get("offload") is not None:
        raise FabricsimError("offload", "is costed by the analytic fidelity only", "drop --fidelity and variability")
    if variability is not None:
        variability.validate()
    base = train(model, system, gpus, global_batch, seq_len, **layout)
    case = TrainingCase(
        catalog.load_model(model),
        catalog.load_system(system),
        _layout_from_json(dict(base.layout)),
        global_batch,
        seq_len,
    )
    rehash = variability is not None and variability.ecmp_rehash
    if rehash and fidelity != "flow":
        raise FabricsimError("ecmp", "ECMP re-hashing needs the flow network", "add --fidelity flow")
    seed = variability.seed if variability is not None else 0
    timers = flow_timers(case.system, gpus, rehash, seed) if fidelity == "flow" else (lambda run: None)
    sim = simulate_training(case, timers, variability)
    return simulated_train_result(base, sim, fidelity)


def simulated_train_result(base: TrainResult, sim: TrainingSimulation, fidelity: str) -> SimulatedTrainResult:
    ratio = sim.estimate.step_time_s / sim.step_time_s
    train_result = dataclasses.replace(
        base,
        step_time_s=sim.step_time_s,
        tokens_per_s=base.tokens_per_s * ratio,
        model_tflops_per_gpu=base.model_tflops_per_gpu * ratio,
        hardware_tflops_per_gpu=base.hardware_tflops_per_gpu * ratio,
        mfu=base.mfu * ratio,
        hfu=base.hfu * ratio,
        time_breakdown_s=tuple(step_breakdown(sim).items()),
        fidelity=fidelity,
    )
    train_result = retime_train_energy(train_result)  # same power, the simulated step time
    tail = sim.tail
    return SimulatedTrainResult(
        train=train_result,
        analytic_step_time_s=sim.estimate.step_time_s,
        step_time_s_p50=tail.p50_s if tail is not None else None,
        step_time_s_p99=tail.p99_s if tail is not None else None,
        seeds=len(tail.samples_s) if tail is not None else 0,
        exposed_comm_s=tuple(sim.result.comm.exposed_s.items()),
        comm_busy_s=tuple(sim.result.comm.busy_s.items()),
        folded=tuple(sim.result.folded.items()),
        simulated_ops=sim.result.ops,
        simulation=sim,
    )
