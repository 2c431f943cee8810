"""``fabricsim measure collective``: time a collective with torch.distributed, print nccl-tests output."""

from __future__ import annotations

import typer

app = typer.Typer(help="Measure real collectives on this machine (torch.distributed).", no_args_is_help=True)


@app.command("collective")
def collective(
    op: str = typer.Option("all-reduce", "--op", help="all-reduce | all-gather | broadcast"),
    backend: str = typer.Option("gloo", "--backend", help="gloo (CPU) | nccl (one GPU per rank)"),
    ranks: int = typer.Option(..., "--ranks", help="local processes, one rank each"),
    sizes: str | None = typer.Option(None, "--sizes", help="comma-separated sizes, e.g. 1KiB,64KiB,1MiB"),
    min_bytes: str = typer.Option("1KiB", "-b", "--min-bytes", help="sweep start (nccl-tests -b)"),
    max_bytes: str = typer.Option("1MiB", "-e", "--max-bytes", help="sweep end (nccl-tests -e)"),
    iters: int = typer.Option(20, "--iters", help="timed calls per size"),
    warmup: int = typer.Option(5, "--warmup", help="untimed calls per size"),
    out: str | None = typer.Option(None, "--out", help="also write the output to this file"),
) -> None:
    """Run OP on --ranks local processes; print nccl-tests format (readable by 'calibrate nccl-tests')."""
    from fabricsim import api
    from fabricsim.errors import FabricsimError
    from fabricsim.io.nccl_tests import format_nccl_tests
    from fabricsim.io.output import write_output
    from fabricsim.io.results import check_output_path

    if out is not None:
        check_output_path(out, "out")  # before the measurement, which takes seconds to minutes
    sweep = api.size_sweep(min_bytes, max_bytes)  # checked even when --sizes replaces it (never ignored)
    chosen = sweep if sizes is None else [s.strip() for s in sizes.split(",") if s.strip()]
    if not chosen:
        raise FabricsimError("sizes", "is empty", "give comma-separated sizes, e.g. 1KiB,64KiB")
    result = api.measure(op, backend=backend, ranks=ranks, sizes=chosen, iters=iters, warmup=warmup)
    text = format_nccl_tests(result)
    if out is not None:
        write_output(out, text, "out")
    typer.echo(text, nl=False)
