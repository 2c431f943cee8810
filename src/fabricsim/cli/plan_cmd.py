"""``fabricsim plan train|infer``: search the parallel layouts and print the ranked best ones."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer

from fabricsim.cli.common import JSON_OPTION, MODEL_OPTION, SYSTEM_OPTION, emit
from fabricsim.errors import FabricsimError

app = typer.Typer(help="Find the best parallel layout for training or serving a model.", no_args_is_help=True)

_LIST = "one value or a comma-separated list, e.g. 4,8 (default: every valid value)"


def int_list(flag: str, text: str | None) -> list[int] | None:
    """``"4,8"`` -> [4, 8]; None stays None; anything else is a one-line user error."""
    if text is None:
        return None
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise FabricsimError(flag, f"expected integers separated by commas, got {text!r}") from None
    if not values:
        raise FabricsimError(flag, "is empty")
    return values


def str_list(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr as an ``on_progress(done, total)`` callback (None if off)."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (TextColumn("plan (layout groups)"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task("plan", total=None)

        def update(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total)

        yield update


@app.command("train", no_args_is_help=True)
def train(
    model: str = MODEL_OPTION,
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs"),
    global_batch: int = typer.Option(..., "--global-batch", help="sequences per optimizer step"),
    seq_len: int = typer.Option(..., "--seq-len", help="tokens per sequence"),
    top: int = typer.Option(5, "--top", help="plans to show"),
    objective: str = typer.Option("tokens-per-s", "--objective", help="tokens-per-s | step-time | memory | goodput"),
    days: float = typer.Option(30.0, "--days", help="days of training, for --objective goodput"),
    refine: int = typer.Option(0, "--refine", help="re-time the best K plans with the event-driven engine"),
    tp: str | None = typer.Option(None, "--tp", help=f"tensor-parallel sizes: {_LIST}"),
    pp: str | None = typer.Option(None, "--pp", help=f"pipeline stages: {_LIST}"),
    dp: str | None = typer.Option(None, "--dp", help=f"data-parallel sizes: {_LIST}"),
    cp: str | None = typer.Option(None, "--cp", help=f"context-parallel sizes: {_LIST}"),
    ep: str | None = typer.Option(None, "--ep", help=f"expert-parallel sizes: {_LIST}"),
    vpp: str | None = typer.Option(None, "--vpp", help=f"virtual stages per GPU: {_LIST}"),
    micro_batch: str | None = typer.Option(None, "--micro-batch", help=f"micro-batch sizes: {_LIST}"),
    zero: str | None = typer.Option(None, "--zero", help=f"ZeRO stages 0-3: {_LIST}"),
    recompute: str | None = typer.Option(None, "--recompute", help=f"none | selective | full: {_LIST}"),
    sequence_parallel: bool | None = typer.Option(
        None, "--sequence-parallel/--no-sequence-parallel", help="only with / without (default: both when tp > 1)"
    ),
    dtype: str | None = typer.Option(None, "--dtype", help="bf16 | fp16 | fp8 (default bf16, and fp8 where native)"),
    search_offload: bool | None = typer.Option(
        None,
        "--search-offload/--no-search-offload",
        help="also try optimizer/weights/activations offload where a layout does not fit (default: on when "
        "the system has a memory tier)",
    ),
    offload_tier: str | None = typer.Option(None, "--offload-tier", help="tiers to offload to: host,grace,cxl"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Rank training layouts (TP, PP, DP, CP, EP, vpp, micro-batch, ZeRO, recompute, SP, dtype)."""
    from fabricsim import api
    from fabricsim.report.tables import plan_table

    constraints: dict[str, object] = {
        flag: int_list(flag.replace("_", "-"), value)
        for flag, value in (("tp", tp), ("pp", pp), ("dp", dp), ("cp", cp), ("ep", ep), ("vpp", vpp))
    }
    constraints |= {"micro_batch": int_list("micro-batch", micro_batch), "zero": int_list("zero", zero)}
    constraints |= {"recompute": str_list(recompute), "dtype": str_list(dtype), "sequence_parallel": sequence_parallel}
    with progress_bar(not as_json and sys.stderr.isatty()) as on_progress:
        if objective.strip().lower() == "goodput":  # step-time search, re-ranked by goodput (api.plan_goodput)
            args = (model, system, gpus, global_batch, seq_len)
            result = api.plan_goodput(*args, days=days, top=top, constraints=constraints, on_progress=on_progress)
            emit(result.to_json(), as_json, plan_table)
            return
        result = api.plan_train(
            model,
            system,
            gpus,
            global_batch,
            seq_len,
            top=top,
            objective=objective,
            refine=refine,
            constraints=constraints,
            on_progress=on_progress,
            search_offload=search_offload,
            offload_tier=offload_tier,
        )
    emit(result.to_json(), as_json, plan_table)


def _slo_s(flag: str, milliseconds: float | None) -> float | None:
    if milliseconds is None:
        return None
    if not milliseconds > 0:
        raise FabricsimError(flag, f"must be a positive number of milliseconds, got {milliseconds!r}")
    return milliseconds / 1e3


@app.command("infer", no_args_is_help=True)
def infer(
    model: str = MODEL_OPTION,
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs (the rest of a layout's replica GPUs are replicas)"),
    input_len: int = typer.Option(..., "--input-len", help="prompt tokens per request"),
    output_len: int = typer.Option(..., "--output-len", help="generated tokens per request"),
    top: int = typer.Option(5, "--top", help="plans to show"),
    objective: str = typer.Option("throughput", "--objective", help="throughput (at the SLOs) | latency"),
    tpot_slo_ms: float | None = typer.Option(None, "--tpot-slo-ms", help="time per output token limit (ms)"),
    ttft_slo_ms: float | None = typer.Option(None, "--ttft-slo-ms", help="time to first token limit (ms)"),
    tp: str | None = typer.Option(None, "--tp", help=f"tensor-parallel sizes: {_LIST}"),
    pp: str | None = typer.Option(None, "--pp", help=f"pipeline stages: {_LIST}"),
    ep: str | None = typer.Option(None, "--ep", help=f"expert-parallel sizes: {_LIST}"),
    dtype: str | None = typer.Option(None, "--dtype", help="weight dtypes bf16|fp16|fp8|fp4, comma-separated"),
    kv_dtype: str | None = typer.Option(None, "--kv-dtype", help="KV-cache dtypes (default: follows --dtype)"),
    batch: int | None = typer.Option(None, "--batch", help="fixed batch per replica (latency objective: default 1)"),
    max_batch: int | None = typer.Option(None, "--max-batch", help="largest batch per replica to consider"),
    arrival_rate: float | None = typer.Option(
        None, "--arrival-rate", help="also serve a Poisson stream (requests/s) on the best layouts, aggregated and P:D"
    ),
    requests: int = typer.Option(500, "--requests", help="requests in that stream"),
    seed: int = typer.Option(0, "--seed", help="seed of that stream"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Rank inference layouts (TP, PP, EP, dtypes, replicas) and batch sizes; with --arrival-rate
    also their prefill/decode splits under a request stream."""
    from fabricsim import api
    from fabricsim.report.tables import plan_table

    constraints: dict[str, object] = {"tp": int_list("tp", tp), "pp": int_list("pp", pp), "ep": int_list("ep", ep)}
    constraints |= {"dtype": str_list(dtype), "kv_dtype": str_list(kv_dtype), "batch": batch, "max_batch": max_batch}
    slo_s = (_slo_s("tpot-slo-ms", tpot_slo_ms), _slo_s("ttft-slo-ms", ttft_slo_ms))
    serving = None if arrival_rate is None else {"arrival_rate": arrival_rate, "requests": requests, "seed": seed}
    with progress_bar(not as_json and sys.stderr.isatty()) as on_progress:
        result = api.plan_infer(
            model,
            system,
            gpus,
            input_len,
            output_len,
            top=top,
            objective=objective,
            slo_s=slo_s,
            constraints=constraints,
            on_progress=on_progress,
            serving=serving,
        )
    emit(result.to_json(), as_json, plan_table)
