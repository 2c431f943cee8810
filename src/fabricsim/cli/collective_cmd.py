"""``fabricsim collective OP``: time one collective on a catalog system (nccl-tests definitions)."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, SYSTEM_OPTION, emit


def collective(
    op: str = typer.Argument(
        ..., help="all-reduce | all-gather | reduce-scatter | all-to-all | broadcast | reduce | send-recv"
    ),
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs in the group"),
    size: str = typer.Option(
        ..., "--size", help="message size in bytes (nccl-tests' S), e.g. 1GiB, 512MB, 1048576; 1Gb (bits) is refused"
    ),
    algorithm: str = typer.Option(
        "auto", "--algorithm", help="auto | ring | tree | halving-doubling | nvls | sharp | hierarchical | direct"
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Estimate time, algbw and busbw of one collective."""
    from fabricsim import api

    result = api.collective(op, system=system, gpus=gpus, size=size, algorithm=algorithm)
    emit(result.to_json(), as_json, "collective_table")
