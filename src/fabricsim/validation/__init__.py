"""Published-measurement suites (layer L8). ``SUITES`` maps a suite name to its runner.

Each runner is a function of a :class:`~fabricsim.validation.base.SpecSource` (the catalog, passed
in by the API) returning a :class:`SuiteResult`; suite modules are imported on demand so that
running one suite does not import the others.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from fabricsim.errors import unknown_name
from fabricsim.validation.base import SpecSource, SuiteResult, ValidationEntry

# suite name -> "module:function" (relative to fabricsim.validation)
SUITES: dict[str, str] = {
    "collectives": "collectives:run",
    "inference": "inference:run",
    "training": "training:run",
}


def run_suite(name: str, source: SpecSource) -> SuiteResult:
    if name not in SUITES:
        raise unknown_name("suite", name, SUITES)
    module_name, function_name = SUITES[name].split(":")
    module = import_module(f"fabricsim.validation.{module_name}")
    runner: Callable[[SpecSource], SuiteResult] = getattr(module, function_name)
    return runner(source)


def run_suites(name: str | None, source: SpecSource) -> list[SuiteResult]:
    """Run one suite, or every suite when ``name`` is None or 'all'."""
    names = sorted(SUITES) if name in (None, "all") else [name]
    return [run_suite(n, source) for n in names]


__all__ = ["SUITES", "SpecSource", "SuiteResult", "ValidationEntry", "run_suite", "run_suites"]
