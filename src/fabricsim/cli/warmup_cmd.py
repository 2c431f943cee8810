"""``fabricsim warmup``: compile (or load) the compiled kernels now, before the first run needs them."""

from __future__ import annotations

import time

import typer

from fabricsim.cli.common import JSON_OPTION


def warmup(as_json: bool = JSON_OPTION) -> None:
    """Compile the packet kernel (numba) now, or load it from its cache, and say which: the first
    packet run on a new machine or after an upgrade otherwise compiles for 30-90 s inside it."""
    from fabricsim import api
    from fabricsim.io.results import dumps

    start = time.perf_counter()
    kernels = api.warm_up()
    elapsed_s = time.perf_counter() - start  # what the user waited, not a result of the model
    if as_json:
        typer.echo(dumps({"kernels": [k.to_json() for k in kernels], "elapsed_s": elapsed_s}))
        return
    for k in kernels:
        where = k.cache_dir if k.cache_dir is not None else "no cache folder: compiled on every run"
        typer.echo(f"{k.name} kernel: {k.action} ({where})")
    typer.echo(f"warm-up took {elapsed_s:.1f} s")
