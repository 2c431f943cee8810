"""Published-measurement suites (layer L8). ``SUITES`` maps a suite name to its runner.

Each runner is a function of a :class:`~fabricsim.validation.base.SpecSource` (the catalog, passed
in by the API) returning a :class:`SuiteResult`; suite modules are imported on demand so that
running one suite does not import the others.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from fabricsim.errors import unknown_name
from fabricsim.validation.base import HoldoutError, SpecSource, SuiteResult, ValidationEntry

# suite name -> "module:function" (relative to fabricsim.validation)
SUITES: dict[str, str] = {
    "collectives": "collectives:run",
    "fabric": "fabric:run",
    "inference": "inference:run",
    "kernels": "kernels:run",
    "mlperf-inference": "mlperf_inference:run",
    "mlperf-training": "mlperf_training:run",
    "serving": "serving:run",
    "training": "training:run",
    "training-h100": "training_h100:run",
    "training-public": "training_public:run",
}


def run_suite(name: str, source: SpecSource, holdout: bool = False) -> SuiteResult:
    """Run one suite; ``holdout`` adds its leave-one-device-out / leave-one-dtype-out errors
    (re-runs the suite's rows once per held-out group)."""
    if name not in SUITES:
        raise unknown_name("suite", name, SUITES)
    module_name, function_name = SUITES[name].split(":")
    module = import_module(f"fabricsim.validation.{module_name}")
    runner: Callable[..., SuiteResult] = getattr(module, function_name)
    return runner(source, holdout=holdout)


def run_suites(name: str | None, source: SpecSource, holdout: bool = True) -> list[SuiteResult]:
    """Run one suite, or every suite when ``name`` is None or 'all' (with held-out errors by default)."""
    names = sorted(SUITES) if name in (None, "all") else [name]
    return [run_suite(n, source, holdout) for n in names]


__all__ = ["SUITES", "HoldoutError", "SpecSource", "SuiteResult", "ValidationEntry", "run_suite", "run_suites"]
