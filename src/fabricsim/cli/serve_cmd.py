"""``fabricsim serve``: request-level serving simulation with continuous batching.

The request file is ``--request-trace`` (``--trace`` is ``train``/``infer``'s Perfetto output; on
``serve`` it is refused with a hint). SLOs are durations with one convention everywhere
(``--slo-ttft 2s``, ``--slo-tpot 100ms``; a bare number is seconds), as in ``plan infer``.
"""

from __future__ import annotations

import typer

from fabricsim.cli import options as o
from fabricsim.cli.common import emit
from fabricsim.cli.progress import working
from fabricsim.errors import FabricsimError

DIST_HELP = "DIST: an integer, uniform:LO,HI, lognormal:MEAN,SIGMA or normal:MEAN,STD (tokens)"


def serve(
    model: str = o.MODEL,
    system: str = o.SYSTEM,
    gpus: int = typer.Option(..., "--gpus", help="GPUs of the whole deployment (split into replicas)"),
    arrival_rate: float | None = typer.Option(None, "--arrival-rate", help="Poisson arrivals, requests/s"),
    request_trace: str | None = o.REQUEST_TRACE,
    trace: str | None = typer.Option(None, "--trace", hidden=True),
    requests: int = typer.Option(1000, "--requests", help="number of Poisson requests"),
    input_len: str = typer.Option("1024", "--input-len", help="prompt length " + DIST_HELP),
    output_len: str = typer.Option("256", "--output-len", help="output length " + DIST_HELP),
    disaggregate: str | None = typer.Option(None, "--disaggregate", help="P:D prefill and decode replicas"),
    seed: int = o.SEED,
    tp: int | None = o.TP,
    pp: int | None = o.PP,
    ep: int | None = o.EP,
    dtype: str | None = o.INFER_DTYPE,
    kv_dtype: str | None = o.KV_DTYPE,
    cuda_graphs: bool = o.CUDA_GRAPHS,
    token_budget: int = typer.Option(8192, "--token-budget", help="max tokens per step (chunked prefill)"),
    max_batch: int = typer.Option(1024, "--max-batch", help="max running sequences per replica"),
    admission: str = typer.Option(
        "on-demand", "--admission",
        help="on-demand (vLLM: allocate KV as needed, preempt on overflow) | reserve (TensorRT-LLM no-evict)"),
    slo_ttft: str = o.SLO_TTFT_SERVE,
    slo_tpot: str = o.SLO_TPOT_SERVE,
    as_json: bool = o.JSON,
) -> None:
    """TTFT/TPOT/E2E P50/P90/P99, throughput and SLO attainment under load (the SLOs used are printed)."""
    params = dict(locals())  # first: exactly the command's parameters
    from fabricsim import api

    if trace is not None:
        raise FabricsimError("trace", "serve reads its request file from --request-trace",
                             "--trace is the Perfetto output of train and infer")
    for key in ("as_json", "trace", "slo_ttft", "slo_tpot"):
        params.pop(key)
    with working("serving simulation"):
        result = api.serve(**params, slo_ttft_s=slo_ttft, slo_tpot_s=slo_tpot)
    emit(result.to_json(), as_json, "serve_table")
