"""Catalog listing and published-measurement validation (public API, layer L9)."""

from __future__ import annotations

from fabricsim import catalog, validation
from fabricsim.errors import unknown_name
from fabricsim.transformer.kernels import kernel_provenance
from fabricsim.validation.calibration import run_system


def catalog_list(kind: str = "all") -> dict[str, list[str]]:
    """Names in the catalog, per kind."""
    if kind == "all":
        return {k: catalog.names(k) for k in catalog.KINDS}
    if kind not in catalog.KINDS:
        raise unknown_name("kind", kind, [*catalog.KINDS, "all"])
    return {kind: catalog.names(kind)}


def catalog_show(kind: str, name: str) -> dict[str, object]:
    """One catalog item as plain data, with the source of each number; a device or system adds
    ``kernel_figures``: which of the device's kernel figures are measured (its ``kernels`` block)
    and which are generation defaults (:func:`fabricsim.transformer.kernels.kernel_provenance`)."""
    item = catalog.describe(kind, name)
    if kind in ("devices", "systems"):
        device = catalog.load_device(name) if kind == "devices" else catalog.load_system(name).device
        item["kernel_figures"] = kernel_provenance(device)
    return item


def validate(suite: str = "all", system: str | None = None) -> dict[str, object]:
    """Run published-measurement suites; JSON ``{suites: [{name, entries, mean_abs_error}]}``.
    With ``system`` (a calibrated system YAML), report its fit's residuals instead."""
    if system is not None:
        return {"suites": [run_system(catalog.load_system(system), system).to_json()]}
    return {"suites": [result.to_json() for result in validation.run_suites(suite, catalog)]}
