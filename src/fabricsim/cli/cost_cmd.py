"""``fabricsim cost``: power, bill of materials and capex of a cluster and its fabric."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, SYSTEM_OPTION, emit


def cost(
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs"),
    topology: str = typer.Option(
        None, "--topology", help="rail-optimized | rail-only | fat-tree | builder string (dragonfly:a=16,p=8,h=8)"
    ),
    optics: str = typer.Option("pluggable", "--optics", help="pluggable | cpo (co-packaged optics on switches)"),
    cooling: str = typer.Option(None, "--cooling", help="air | liquid (default: the system's)"),
    load: str = typer.Option("max", "--load", help="max (nameplate) | train | infer | idle"),
    nic: str = typer.Option(None, "--nic", help="scale-out NIC as a catalog link (e.g. ib-xdr)"),
    switch: str = typer.Option(None, "--switch", help="scale-out switch (e.g. quantum-x800-q3400)"),
    prices: str = typer.Option(None, "--prices", help="YAML file overriding component prices or power"),
    compare_rail_only: bool = typer.Option(
        False, "--compare-rail-only", help="rail-only vs rail-optimized savings and MoE all-to-all slowdown"
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Power by component (W), bill of materials and capex (USD estimates) of GPUs and fabric."""
    from fabricsim import api
    from fabricsim.report.cost_tables import cost_table, rail_only_table

    if compare_rail_only:
        emit(api.compare_rail_only(system, gpus).to_json(), as_json, rail_only_table)
        return
    result = api.cost(
        system,
        gpus,
        topology=topology,
        optics=optics,
        cooling=cooling,
        load=load,
        nic=nic,
        switch=switch,
        prices=prices,
    )
    emit(result.to_json(), as_json, cost_table)
