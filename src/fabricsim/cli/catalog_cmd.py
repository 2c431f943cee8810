"""``fabricsim catalog``: list and show devices, systems, models, links, switches and pools."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, emit

app = typer.Typer(help="List and show catalog items (devices, systems, models, links, switches, pools).",
                  no_args_is_help=True)


@app.command("list")
def list_items(
    kind: str = typer.Argument("all", help="devices | systems | models | links | switches | pools | all"),
    as_json: bool = JSON_OPTION,
) -> None:
    """List catalog names."""
    from fabricsim import api

    emit(api.catalog_list(kind), as_json, "catalog_list_table")


@app.command("show")
def show(
    kind: str = typer.Argument(..., help="devices | systems | models | links | switches | pools"),
    name: str = typer.Argument(..., help="catalog name or path to a YAML/config.json file"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Show one item with the source of every number."""
    from fabricsim import api

    emit(api.catalog_show(kind, name), as_json, "catalog_item_table")
