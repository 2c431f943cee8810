"""Failures, checkpoints and goodput of long training runs (layer L8).

Pure math and a seeded Monte-Carlo; no catalog, no I/O. :mod:`.interval` (Young's and Daly's
checkpoint intervals, Daly's expected ETTR), :mod:`.failures` (per-cause rates scaled by component
counts), :mod:`.checkpoint` (checkpoint and restart costs on the fabric), :mod:`.montecarlo`
(vectorised runs), :mod:`.goodput` (the combination), :mod:`.spec` (the rate-set document),
:mod:`.result` (the JSON contract), :mod:`.ocs` (a failed cube's blast radius with and without
optical circuit switching). The api (:func:`fabricsim.api.goodput`) feeds it the counts
of the topology, the state bytes of the memory model and the slowdown of the flow model.
"""

from fabricsim.reliability.checkpoint import (
    CheckpointCost,
    CheckpointPath,
    CheckpointTarget,
    RestartCost,
    checkpoint_cost,
    unique_state_bytes,
)
from fabricsim.reliability.failures import (
    Component,
    ComponentCounts,
    FailureCause,
    FailureRates,
    LinkFailurePolicy,
    cluster_rates,
)
from fabricsim.reliability.goodput import Degradation, RunPlan, Scenario, Training, estimate, summary
from fabricsim.reliability.interval import daly_interval_s, expected_ettr, young_interval_s
from fabricsim.reliability.ocs import CubeBlastRadius
from fabricsim.reliability.result import GoodputResult
from fabricsim.reliability.spec import FailureRatesSpec, rates

__all__ = [
    "CheckpointCost",
    "CheckpointPath",
    "CheckpointTarget",
    "Component",
    "ComponentCounts",
    "CubeBlastRadius",
    "Degradation",
    "FailureCause",
    "FailureRates",
    "FailureRatesSpec",
    "GoodputResult",
    "LinkFailurePolicy",
    "RestartCost",
    "RunPlan",
    "Scenario",
    "Training",
    "checkpoint_cost",
    "cluster_rates",
    "daly_interval_s",
    "estimate",
    "expected_ettr",
    "rates",
    "summary",
    "unique_state_bytes",
    "young_interval_s",
]
