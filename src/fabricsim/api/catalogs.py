"""Catalog listing and published-measurement validation (public API, layer L9)."""

from __future__ import annotations

from fabricsim import catalog, validation
from fabricsim.errors import unknown_name
from fabricsim.validation.calibration import run_system


def catalog_list(kind: str = "all") -> dict[str, list[str]]:
    """Names in the catalog, per kind."""
    if kind == "all":
        return {k: catalog.names(k) for k in catalog.KINDS}
    if kind not in catalog.KINDS:
        raise unknown_name("kind", kind, [*catalog.KINDS, "all"])
    return {kind: catalog.names(kind)}


def catalog_show(kind: str, name: str) -> dict[str, object]:
    """One catalog item as plain data, with the source of each number."""
    return catalog.describe(kind, name)


def validate(suite: str = "all", system: str | None = None) -> dict[str, object]:
    """Run published-measurement suites; JSON ``{suites: [{name, entries, mean_abs_error}]}``.
    With ``system`` (a calibrated system YAML), report its fit's residuals instead."""
    if system is not None:
        return {"suites": [run_system(catalog.load_system(system), system).to_json()]}
    return {"suites": [result.to_json() for result in validation.run_suites(suite, catalog)]}
