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

DIST_HELP = "DIST: an integer, uniform:LO,HI, lognormal:MEAN,SIGMA, normal:MEAN,STD or zipf:S,MIN,MAX (tokens)"


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
    arrival: str = typer.Option(
        "poisson", "--arrival",
        help="poisson | gamma:CV (gamma gaps of mean 1/rate; CV > 1 bursty, gamma:1 = Poisson)"),
    kv_pool: str | None = typer.Option(
        None, "--kv-pool", help="shared CXL pool for preempted requests' KV: a catalog pool (cxl-pool-cmm-b) or YAML"),
    pool_sharing: int | None = typer.Option(
        None, "--pool-sharing", help="GPUs sharing the pool, the deployment's included (default: its hosts' GPUs)"),
    scheduler: str = typer.Option(
        "chunked", "--scheduler",
        help="chunked (vLLM chunked prefill) | orca (iteration-level, whole prompts) | static (request-level batches)"),
    router: str = typer.Option("least-work", "--router",
                               help="least-work (fewest outstanding requests) | round-robin | random (--seed)"),
    shared_prefix: float = typer.Option(0.0, "--shared-prefix",
                                        help="fraction 0..1 of each prompt that is one cached, shared prefix"),
    speculative: int | None = typer.Option(None, "--speculative", help="K draft tokens per step (with --acceptance)"),
    acceptance: float | None = typer.Option(None, "--acceptance", help="draft token acceptance rate A in [0, 1)"),
    slo_ttft: str = o.SLO_TTFT_SERVE,
    slo_tpot: str = o.SLO_TPOT_SERVE,
    fidelity: str = typer.Option(
        "simulate", "--fidelity",
        help="simulate (analytic step and KV hand-off times) | flow | packet (they run on the fabric)"),
    topology: str | None = o.TOPOLOGY,
    placement: str | None = o.PLACEMENT,
    nic: str | None = o.NIC,
    background: str | None = o.BACKGROUND,
    transport: str | None = o.TRANSPORT,
    ber: str | None = o.BER,
    cc_params: list[str] | None = o.CC_PARAM,
    link_jitter: float = o.LINK_JITTER,
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
