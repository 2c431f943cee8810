"""``fabricsim cluster SPEC.yaml``: several jobs on one fabric, each alone and all together."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, emit
from fabricsim.cli.progress import working

SPEC_HELP = (
    "YAML: fabric (builder string, as traffic --topology), routing (ecmp | spray | adaptive), fidelity (flow | "
    "packet), optional background (PATTERN:LOAD), packet only: transport (roce | ib | uet), ber and cc_params "
    "({NAME: VALUE}, as --cc-param), "
    "jobs: [{name, command, placement}]; a command is the train, "
    "infer or 'traffic PATTERN --size S --hosts N' command you would run alone; placement packed | spread | "
    "random:SEED | FILE"
)


def cluster(
    spec: str = typer.Argument(..., help=SPEC_HELP),
    as_json: bool = JSON_OPTION,
) -> None:
    """Per job: step time (train), TPOT (infer) or completion (traffic) alone and shared, the slowdown;
    per switch tier: link utilization. The spec sets the fabric, routing and fidelity for every job."""
    from fabricsim import api
    from fabricsim.report.cluster_tables import cluster_table

    with working("running the jobs alone and together"):
        result = api.cluster(spec)
    emit(result.to_json(), as_json, cluster_table)
