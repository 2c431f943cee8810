"""``fabricsim infer``: TTFT, TPOT and throughput of one static batch (analytic)."""

from __future__ import annotations

import typer

from fabricsim.cli import fidelity as fidelity_flags
from fabricsim.cli.common import JSON_OPTION, MODEL_OPTION, SYSTEM_OPTION, emit


def infer(
    model: str = MODEL_OPTION,
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs (replicas = gpus / (pp x max(tp, ep)))"),
    batch: str = typer.Option("max", "--batch", help="sequences per replica, or 'max' for the largest whose KV fits"),
    input_len: int = typer.Option(..., "--input-len", help="prompt tokens per sequence"),
    output_len: int = typer.Option(..., "--output-len", help="generated tokens per sequence"),
    tp: int | None = typer.Option(None, "--tp", help="tensor-parallel size (default: a node's share, 1 with --ep)"),
    pp: int | None = typer.Option(None, "--pp", help="pipeline stages (default 1)"),
    ep: int | None = typer.Option(None, "--ep", help="expert-parallel size; ep > tp means attention-DP (default 1)"),
    dtype: str | None = typer.Option(None, "--dtype", help="weights: bf16 | fp16 | fp8 | fp4 (default bf16)"),
    kv_dtype: str | None = typer.Option(None, "--kv-dtype", help="KV cache dtype (default fp8 for fp8/fp4 weights)"),
    kv_spill: str | None = typer.Option(
        None, "--kv-spill", help="spill tier link for KV that HBM cannot hold: pcie-gen5 (host memory), cxl2, cxl3"),
    kv_spill_capacity: str | None = typer.Option(
        None, "--kv-spill-capacity", help="spill capacity per GPU, e.g. 256GB (default 256 GB)"),
    as_json: bool = JSON_OPTION,
    fidelity: str = fidelity_flags.FIDELITY_OPTION,
    trace: str | None = fidelity_flags.TRACE_OPTION,
    seeds: int | None = fidelity_flags.SEEDS_OPTION,
    straggler: str | None = fidelity_flags.STRAGGLER_OPTION,
    jitter: float = fidelity_flags.JITTER_OPTION,
    link_jitter: float = fidelity_flags.LINK_JITTER_OPTION,
    seed: int = fidelity_flags.SEED_OPTION,
) -> None:
    """Prefill (TTFT) and decode (TPOT) of a batch, tokens/s, KV and memory per GPU."""
    from fabricsim import api
    from fabricsim.report.tables import infer_table

    flags = fidelity_flags.SimulationFlags(fidelity, trace, seeds, straggler, jitter, link_jitter, False, seed)
    if flags.wants_engine:  # --fidelity simulate, --trace or variability: decode through the engine
        options = {"batch": batch, "input_len": input_len, "output_len": output_len, "tp": tp, "pp": pp, "ep": ep}
        options |= {"dtype": dtype, "kv_dtype": kv_dtype}
        fidelity_flags.run_infer(flags, (model, system, gpus), options, as_json)
        return

    result = api.infer(model, system, gpus, batch=batch, input_len=input_len, output_len=output_len, tp=tp, pp=pp,
                       ep=ep, dtype=dtype, kv_dtype=kv_dtype, kv_spill=kv_spill, kv_spill_capacity=kv_spill_capacity)
    emit(result.to_json(), as_json, infer_table)
