"""``fabricsim traffic PATTERN``: a synthetic traffic pattern on a topology, flow fidelity."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, emit


def traffic(
    pattern: str = typer.Argument(..., help="permutation | all-to-all | incast | ring"),
    topology: str = typer.Option(
        ...,
        "--topology",
        help="builder string (fat-tree:k=8, leaf-spine:..., dragonfly:a=8,p=4,h=4, torus:dims=8x8x8) or system",
    ),
    routing: str = typer.Option("ecmp", "--routing", help="ecmp | spray | adaptive"),
    seed: int = typer.Option(0, "--seed", help="seed of the pattern and the ECMP hash"),
    size: str = typer.Option("64MiB", "--size", help="bytes per flow, e.g. 64MiB"),
    hosts: int = typer.Option(None, "--hosts", help="use only the first N hosts (default: all)"),
    fail_links: int = typer.Option(
        0, "--fail-links", help="fail N random fabric cables (switch-switch, both directions), drawn with --seed"
    ),
    fail_fraction: float = typer.Option(0.0, "--fail-fraction", help="fail this fraction of the fabric cables"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Per-host throughput, completion time and peak link load of a traffic pattern (max-min flows);
    with --fail-links/--fail-fraction, after failing fabric cables, next to the healthy figures."""
    from fabricsim import api

    result = api.traffic(
        pattern,
        topology=topology,
        routing=routing,
        seed=seed,
        size=size,
        hosts=hosts,
        fail_links=fail_links,
        fail_fraction=fail_fraction,
    )
    emit(result.to_json(), as_json, "traffic_table")
