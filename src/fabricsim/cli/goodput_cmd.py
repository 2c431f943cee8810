"""``fabricsim goodput``: what a long training run delivers under failures and checkpoints."""

from __future__ import annotations

import typer

from fabricsim.cli import options as o
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
    gpus: int = o.GPUS,
    days: float = typer.Option(..., "--days", help="wall-clock days of the run"),
    global_batch: int = o.GLOBAL_BATCH,
    seq_len: int = o.SEQ_LEN,
    tp: int | None = o.TP,
    pp: int | None = o.PP,
    dp: int | None = o.DP,
    cp: int | None = o.CP,
    ep: int | None = o.EP,
    vpp: int | None = o.VPP,
    micro_batch: int | None = o.MICRO_BATCH,
    zero: int | None = o.ZERO,
    recompute: str | None = o.RECOMPUTE,
    dtype: str | None = o.TRAIN_DTYPE,
    checkpoint_interval: str = typer.Option(
        "auto", "--checkpoint-interval", help="seconds of work between checkpoints, or auto (Daly's optimum)"
    ),
    checkpoint_target: str = typer.Option("pfs", "--checkpoint-target", help="pfs | host | peers"),
    link_failures: str = typer.Option(
        "reroute", "--link-failures", help="reroute (switch-switch cables degrade) | stop (every failure stops)"
    ),
    failure_rates: str | None = typer.Option(
        None, "--failure-rates", help="rate-set name or YAML path (default: the set of the system's GPU generation)"
    ),
    pfs_bandwidth: str | None = typer.Option(None, "--pfs-bandwidth", help="file-system bandwidth, e.g. 2TB/s"),
    restart: str | None = typer.Option(
        None, "--restart", help="restart phases in seconds, e.g. detection=60,reschedule=120,startup=240,warmup=120"
    ),
    runs: int = typer.Option(1000, "--runs", help="Monte-Carlo runs"),
    seed: int = o.SEED,
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
