"""``fabricsim plan train|infer``: search the parallel layouts and print the ranked best ones.

Search dimensions take one value or a comma-separated list; they are typed and checked by the
API (:class:`fabricsim.specs.inputs.TrainConstraints`). The table ends with a legend of the
abbreviations it prints (z2, mb1, adp, x4, rc:sel, ...).
"""

from __future__ import annotations

import typer

from fabricsim.cli import options as o
from fabricsim.cli import train_settings as ts
from fabricsim.cli.common import emit
from fabricsim.cli.progress import progress_bar
from fabricsim.errors import FabricsimError

app = typer.Typer(help="Find the best parallel layout for training or serving a model.", no_args_is_help=True)

MAX_DAYS = 100_000  # the bound of goodput's --days (api.goodput)
TRAIN_LISTS = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero", "expert_tp")
SEARCH_OFFLOAD = typer.Option(
    None,
    "--search-offload/--no-search-offload",
    help="also try optimizer/weights/activations offload where a layout does not fit (default: on when the "
    "system has a memory tier)",
)
OFFLOAD_TIERS = typer.Option(None, "--offload-tier", help="tiers to offload to: host,grace,cxl (default: all it has)")
PLAN_TOPOLOGY = typer.Option(
    None,
    "--topology",
    help="the fabric --refine re-times on (a builder string, as train's); or ocs-torus:auto on tpu-v5p/tpu7x: "
    "the job's own OCS slice, each plan with the slice shape and twist its collectives run fastest on",
)

PLAN_INFER_TOPOLOGY = typer.Option(
    None,
    "--topology",
    help="an OCS slice on tpu-v5p/tpu7x: ocs-torus:auto (each plan with the slice shape and twist its requests' "
    "collectives run fastest on) or ocs-torus:4x4x8[,twisted=1] (plans on that slice)",
)


@app.command("train", no_args_is_help=True)
def train(
    model: str = o.MODEL,
    system: str = o.SYSTEM,
    gpus: int = o.GPUS,
    global_batch: int = o.GLOBAL_BATCH,
    seq_len: int = o.SEQ_LEN,
    top: int = o.TOP,
    objective: str = typer.Option("tokens-per-s", "--objective", help="tokens-per-s | step-time | memory | goodput"),
    days: float = typer.Option(30.0, "--days", help="days of training, for --objective goodput"),
    refine: int = typer.Option(0, "--refine", help="re-time the best K plans with the event-driven engine"),
    tp: str | None = o.TP_LIST,
    pp: str | None = o.PP_LIST,
    dp: str | None = o.DP_LIST,
    cp: str | None = o.CP_LIST,
    ep: str | None = o.EP_LIST,
    vpp: str | None = o.VPP_LIST,
    micro_batch: str | None = o.MICRO_BATCH_LIST,
    zero: str | None = o.ZERO_LIST,
    recompute: str | None = o.RECOMPUTE_LIST,
    sequence_parallel: bool | None = o.SEQUENCE_PARALLEL_BOTH,
    dtype: str | None = o.TRAIN_DTYPE_LIST,
    expert_tp: str | None = ts.EXPERT_TP_LIST_OPTION,
    flash_attention: bool | None = ts.FLASH_OPTION,
    overlap_grad_reduce: bool | None = ts.GRAD_OPTION,
    overlap_param_gather: bool | None = ts.PARAM_OPTION,
    tp_comm_overlap: bool | None = ts.TP_COMM_OPTION,
    a2a_overlap: bool | None = ts.A2A_OPTION,
    fp8_recipe: str | None = ts.FP8_RECIPE_OPTION,
    capacity_factor: float | None = ts.CAPACITY_OPTION,
    moe_dispatcher: str | None = ts.DISPATCHER_OPTION,
    cross_entropy: str | None = ts.CROSS_ENTROPY_OPTION,
    mtp_layers: int | None = ts.MTP_OPTION,
    account_for_embedding_in_pipeline_split: bool | None = ts.SPLIT_EMBEDDING_OPTION,
    account_for_loss_in_pipeline_split: bool | None = ts.SPLIT_LOSS_OPTION,
    grad_reduce_in_fp32: bool | None = ts.GRAD_FP32_OPTION,
    pipeline_layout: str | None = ts.PIPELINE_LAYOUT_OPTION,
    recompute_modules: str | None = ts.RECOMPUTE_MODULES_OPTION,
    lora_rank: int | None = ts.LORA_OPTION,
    search_offload: bool | None = SEARCH_OFFLOAD,
    offload_tier: str | None = OFFLOAD_TIERS,
    topology: str | None = PLAN_TOPOLOGY,
    placement: str | None = o.PLACEMENT,
    nic: str | None = o.NIC,
    background: str | None = o.BACKGROUND,
    as_json: bool = o.JSON,
) -> None:
    """Rank training layouts (TP, PP, DP, CP, EP, expert TP, vpp, micro-batch, ZeRO, recompute, SP,
    dtype) and choose the free overlaps."""
    params = dict(locals())  # first: exactly the command's parameters
    from fabricsim import api
    from fabricsim.api.training import SETTINGS

    constraints: dict[str, object] = {key: o.int_list(key, params.pop(key)) for key in TRAIN_LISTS}
    constraints |= {key: o.str_list(key, params.pop(key)) for key in ("recompute", "dtype")}
    constraints["sequence_parallel"] = params.pop("sequence_parallel")
    params.pop("as_json")
    days = params.pop("days")
    if not 0 < days <= MAX_DAYS:  # read by --objective goodput only, but never ignored when wrong (nan fails too)
        raise FabricsimError("days", f"must be in (0, {MAX_DAYS}] days, got {days}", "e.g. --days 30")
    with progress_bar("plan (layout groups)", not as_json) as on_progress:
        if objective.strip().lower() == "goodput":  # step-time search, re-ranked by goodput (api.plan_goodput)
            if any(params[key] is not None for key in SETTINGS):
                raise FabricsimError("objective", "goodput ranks with the default settings", "drop the settings")
            for key in o.FABRIC_KEYS:
                if params[key] is not None:
                    raise FabricsimError(key, "re-times refined plans, which goodput ranking has not", "drop it")
            args = (model, system, gpus, global_batch, seq_len)
            result = api.plan_goodput(*args, days=days, top=top, constraints=constraints, on_progress=on_progress)
        else:
            result = api.plan_train(**params, constraints=constraints, on_progress=on_progress)
    emit(result.to_json(), as_json, "plan_table")


@app.command("infer", no_args_is_help=True)
def infer(
    model: str = o.MODEL,
    system: str = o.SYSTEM,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs (the rest of a layout's replica GPUs are replicas)"),
    input_len: int = o.INPUT_LEN,
    output_len: int = o.OUTPUT_LEN,
    top: int = o.TOP,
    objective: str = typer.Option("throughput", "--objective", help="throughput (at the SLOs) | latency"),
    slo_tpot: str | None = o.SLO_TPOT,
    slo_ttft: str | None = o.SLO_TTFT,
    tpot_slo_ms: str | None = typer.Option(None, "--tpot-slo-ms", hidden=True),
    ttft_slo_ms: str | None = typer.Option(None, "--ttft-slo-ms", hidden=True),
    tp: str | None = o.TP_LIST,
    pp: str | None = o.PP_LIST,
    ep: str | None = o.EP_LIST,
    dtype: str | None = typer.Option(None, "--dtype", help="weight dtypes bf16|fp16|fp8|fp4, comma-separated"),
    kv_dtype: str | None = typer.Option(None, "--kv-dtype", help="KV-cache dtypes (default: follows --dtype)"),
    batch: int | None = typer.Option(None, "--batch", help="fixed batch per replica (latency objective: default 1)"),
    max_batch: int | None = typer.Option(None, "--max-batch", help="largest batch per replica to consider"),
    arrival_rate: float | None = typer.Option(
        None, "--arrival-rate", help="also serve a Poisson stream (requests/s) on the best layouts, aggregated and P:D"
    ),
    requests: int | None = typer.Option(None, "--requests", help="requests in that stream (default: 500)"),
    seed: int = o.SEED,
    topology: str | None = PLAN_INFER_TOPOLOGY,
    as_json: bool = o.JSON,
) -> None:
    """Rank inference layouts (TP, PP, EP, dtypes, replicas) and batch sizes; with --arrival-rate
    also their prefill/decode splits under a request stream."""
    from fabricsim import api

    for old, new in (("tpot-slo-ms", tpot_slo_ms), ("ttft-slo-ms", ttft_slo_ms)):
        if new is not None:
            hint = f"use --slo-{old[:4]} with a unit, e.g. --slo-{old[:4]} {new}ms (the same convention as serve)"
            raise FabricsimError(old, "was renamed", hint)
    constraints: dict[str, object] = {key: o.int_list(key, text) for key, text in (("tp", tp), ("pp", pp), ("ep", ep))}
    constraints |= {"dtype": o.str_list("dtype", dtype), "kv_dtype": o.str_list("kv_dtype", kv_dtype)}
    constraints |= {"batch": batch, "max_batch": max_batch}
    serving = {"arrival_rate": arrival_rate, "seed": seed}  # checked even without a rate
    if requests is not None:  # else the API's default, which names itself if it exceeds the cap
        serving["requests"] = requests
    with progress_bar("plan (layouts)", not as_json) as on_progress:
        result = api.plan_infer(
            model, system, gpus, input_len, output_len, top=top, objective=objective, slo_tpot_s=slo_tpot,
            slo_ttft_s=slo_ttft,
            constraints=constraints, on_progress=on_progress, serving=serving, topology=topology,
        )
    emit(result.to_json(), as_json, "plan_table")
