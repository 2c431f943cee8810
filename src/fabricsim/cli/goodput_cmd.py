"""``fabricsim goodput``: what a long training run delivers under failures and checkpoints."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, MODEL_OPTION, SYSTEM_OPTION, emit


def _bandwidth(text: str | None) -> float | None:
    """``2TB/s``, ``2e12`` or ``500GB`` (per second) to bytes/s; None keeps the rate set's figure."""
    if text is None:
        return None
    from fabricsim.units import parse_size

    value = text.strip()
    value = value[:-2] if value.lower().endswith("/s") else value
    return float(parse_size(value, "pfs-bandwidth"))


def _restart(text: str | None) -> dict[str, float] | None:
    """``detection=60,startup=300`` to {"detection": 60.0, "startup": 300.0} (seconds)."""
    if text is None:
        return None
    from fabricsim.errors import FabricsimError

    phases: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        try:
            phases[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise FabricsimError("restart", f"expected PHASE=SECONDS, got {item!r}", "e.g. detection=60,startup=300")
    return phases


def goodput(
    model: str = MODEL_OPTION,
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs"),
    days: float = typer.Option(..., "--days", help="wall-clock days of the run"),
    global_batch: int = typer.Option(..., "--global-batch", help="sequences per optimizer step"),
    seq_len: int = typer.Option(..., "--seq-len", help="tokens per sequence"),
    tp: int | None = typer.Option(None, "--tp", help="tensor-parallel size (default 1)"),
    pp: int | None = typer.Option(None, "--pp", help="pipeline-parallel stages (default 1)"),
    dp: int | None = typer.Option(None, "--dp", help="data-parallel size (default gpus/(tp*pp*cp))"),
    cp: int | None = typer.Option(None, "--cp", help="context-parallel size (default 1)"),
    ep: int | None = typer.Option(None, "--ep", help="expert-parallel size (default 1)"),
    vpp: int | None = typer.Option(None, "--vpp", help="model chunks per GPU (default 1)"),
    micro_batch: int | None = typer.Option(None, "--micro-batch", help="sequences per micro-batch (default 1)"),
    zero: int | None = typer.Option(None, "--zero", help="ZeRO stage 0|1|2|3"),
    recompute: str | None = typer.Option(None, "--recompute", help="none | selective | full"),
    dtype: str | None = typer.Option(None, "--dtype", help="bf16 | fp16 | fp8"),
    checkpoint_interval: str = typer.Option(
        "auto", "--checkpoint-interval", help="seconds of work between checkpoints, or auto (Daly's optimum)"
    ),
    checkpoint_target: str = typer.Option("pfs", "--checkpoint-target", help="pfs | host | peers"),
    link_failures: str = typer.Option(
        "reroute", "--link-failures", help="reroute (switch-switch cables degrade) | stop (every failure stops)"
    ),
    failure_rates: str = typer.Option("llama3-h100", "--failure-rates", help="rate-set name or YAML path"),
    pfs_bandwidth: str | None = typer.Option(None, "--pfs-bandwidth", help="file-system bandwidth, e.g. 2TB/s"),
    restart: str | None = typer.Option(
        None, "--restart", help="restart phases in seconds, e.g. detection=60,reschedule=120,startup=240,warmup=120"
    ),
    runs: int = typer.Option(1000, "--runs", help="Monte-Carlo runs"),
    seed: int = typer.Option(0, "--seed", help="random seed"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Interruptions by cause, checkpoint interval and cost, restart time, ETTR and goodput of a run."""
    from fabricsim import api
    from fabricsim.report.goodput import goodput_table

    layout = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "vpp": vpp, "micro_batch": micro_batch}
    layout |= {"zero": zero, "recompute": recompute, "dtype": dtype}
    result = api.goodput(
        model,
        system,
        gpus,
        global_batch,
        seq_len,
        days=days,
        checkpoint_interval=checkpoint_interval,
        checkpoint_target=checkpoint_target,
        link_failures=link_failures,
        failure_rates=failure_rates,
        pfs_bandwidth_Bps=_bandwidth(pfs_bandwidth),
        restart=_restart(restart),
        runs=runs,
        seed=seed,
        **layout,
    )
    emit(result.to_json(), as_json, goodput_table)
