"""``fabricsim serve``: request-level serving simulation with continuous batching."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, MODEL_OPTION, SYSTEM_OPTION, emit

DIST_HELP = "DIST: an integer, uniform:LO,HI, lognormal:MEAN,SIGMA or normal:MEAN,STD (tokens)"


def serve(
    model: str = MODEL_OPTION,
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="GPUs of the whole deployment (split into replicas)"),
    arrival_rate: float | None = typer.Option(None, "--arrival-rate", help="Poisson arrivals, requests/s"),
    trace: str | None = typer.Option(
        None, "--trace", help="CSV (header) or JSONL trace: arrival_s, input_len, output_len per request"),
    requests: int = typer.Option(1000, "--requests", help="number of Poisson requests"),
    input_len: str = typer.Option("1024", "--input-len", help="prompt length " + DIST_HELP),
    output_len: str = typer.Option("256", "--output-len", help="output length " + DIST_HELP),
    disaggregate: str | None = typer.Option(None, "--disaggregate", help="P:D prefill and decode replicas"),
    seed: int = typer.Option(0, "--seed", help="random seed (arrivals and lengths)"),
    tp: int | None = typer.Option(None, "--tp", help="tensor-parallel size per replica"),
    pp: int | None = typer.Option(None, "--pp", help="pipeline stages per replica"),
    ep: int | None = typer.Option(None, "--ep", help="expert-parallel size per replica (ep > tp: attention-DP)"),
    dtype: str | None = typer.Option(None, "--dtype", help="weights: bf16 | fp16 | fp8 | fp4"),
    kv_dtype: str | None = typer.Option(None, "--kv-dtype", help="KV cache dtype"),
    token_budget: int = typer.Option(8192, "--token-budget", help="max tokens per step (chunked prefill)"),
    max_batch: int = typer.Option(1024, "--max-batch", help="max running sequences per replica"),
    admission: str = typer.Option(
        "on-demand", "--admission",
        help="on-demand (vLLM: allocate KV as needed, preempt on overflow) | reserve (TensorRT-LLM no-evict)"),
    slo_ttft: float = typer.Option(2.0, "--slo-ttft", help="TTFT SLO, seconds"),
    slo_tpot: float = typer.Option(0.1, "--slo-tpot", help="TPOT SLO, seconds"),
    as_json: bool = JSON_OPTION,
) -> None:
    """TTFT/TPOT/E2E P50/P90/P99, throughput and SLO attainment under load."""
    from fabricsim import api
    from fabricsim.report.tables import serve_table

    result = api.serve(
        model, system, gpus, arrival_rate=arrival_rate, trace=trace, requests=requests, input_len=input_len,
        output_len=output_len, seed=seed, disaggregate=disaggregate, tp=tp, pp=pp, ep=ep, dtype=dtype,
        kv_dtype=kv_dtype, token_budget=token_budget, max_batch=max_batch, slo_ttft_s=slo_ttft, slo_tpot_s=slo_tpot,
        admission=admission,
    )
    emit(result.to_json(), as_json, serve_table)
