"""``fabricsim train``: estimate one training step of a model on a catalog system."""

from __future__ import annotations

import typer

from fabricsim.cli import fidelity as fidelity_flags
from fabricsim.cli.common import JSON_OPTION, MODEL_OPTION, SYSTEM_OPTION, emit


def train(
    model: str = MODEL_OPTION,
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs"),
    global_batch: int = typer.Option(..., "--global-batch", help="sequences per optimizer step"),
    seq_len: int = typer.Option(..., "--seq-len", help="tokens per sequence"),
    tp: int | None = typer.Option(None, "--tp", help="tensor-parallel size (default 1)"),
    pp: int | None = typer.Option(None, "--pp", help="pipeline-parallel stages (default 1)"),
    dp: int | None = typer.Option(None, "--dp", help="data-parallel size (default gpus/(tp*pp*cp))"),
    cp: int | None = typer.Option(None, "--cp", help="context-parallel size (default 1)"),
    ep: int | None = typer.Option(None, "--ep", help="expert-parallel size, a divisor of dp (default 1)"),
    vpp: int | None = typer.Option(None, "--vpp", help="model chunks per GPU, interleaved schedule (default 1)"),
    micro_batch: int | None = typer.Option(None, "--micro-batch", help="sequences per micro-batch (default 1)"),
    zero: int | None = typer.Option(None, "--zero", help="ZeRO stage 0|1|2|3 (default 1 for MoE, else 0)"),
    recompute: str | None = typer.Option(None, "--recompute", help="none | selective | full (default none)"),
    sequence_parallel: bool | None = typer.Option(
        None, "--sequence-parallel/--no-sequence-parallel", help="sequence parallelism (default on when tp > 1)"
    ),
    dtype: str | None = typer.Option(None, "--dtype", help="bf16 | fp16 | fp8 (default bf16)"),
    offload: str | None = typer.Option(
        None, "--offload", help="tensor classes kept below HBM: optimizer,weights,activations (comma-separated)"
    ),
    offload_tier: str | None = typer.Option(None, "--offload-tier", help="host | grace | cxl (default host)"),
    as_json: bool = JSON_OPTION,
    fidelity: str = fidelity_flags.FIDELITY_OPTION,
    trace: str | None = fidelity_flags.TRACE_OPTION,
    seeds: int | None = fidelity_flags.SEEDS_OPTION,
    straggler: str | None = fidelity_flags.STRAGGLER_OPTION,
    jitter: float = fidelity_flags.JITTER_OPTION,
    link_jitter: float = fidelity_flags.LINK_JITTER_OPTION,
    ecmp_rehash: bool = fidelity_flags.ECMP_OPTION,
    seed: int = fidelity_flags.SEED_OPTION,
) -> None:
    """Step time, MFU/HFU, memory per GPU and where the time goes, for one parallel layout."""
    from fabricsim import api
    from fabricsim.report.tables import train_table

    flags = fidelity_flags.SimulationFlags(fidelity, trace, seeds, straggler, jitter, link_jitter, ecmp_rehash, seed)
    if flags.wants_engine:  # --fidelity simulate|flow, --trace or variability: the event-driven engine
        layout = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "vpp": vpp, "micro_batch": micro_batch}
        layout |= {"zero": zero, "recompute": recompute, "sequence_parallel": sequence_parallel, "dtype": dtype}
        layout |= {"offload": offload} if offload is not None else {}
        fidelity_flags.run_train(flags, (model, system, gpus, global_batch, seq_len), layout, as_json)
        return
    result = api.train(
        model,
        system,
        gpus,
        global_batch,
        seq_len,
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=ep,
        vpp=vpp,
        micro_batch=micro_batch,
        zero=zero,
        recompute=recompute,
        sequence_parallel=sequence_parallel,
        dtype=dtype,
        offload=offload,
        offload_tier=offload_tier,
    )
    emit(result.to_json(), as_json, train_table)
