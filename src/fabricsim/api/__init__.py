"""The public Python API (layer L9): the only place catalog names become specs.

Every function accepts catalog names or file paths, validates the inputs once at this edge
(:mod:`fabricsim.specs.inputs`), calls the library, and returns an immutable result whose
``to_json()`` is the JSON contract of DESIGN.md. One module per family of questions; every public
name is reachable here (``fabricsim.api.train``).

The families load on first use (PEP 562 ``__getattr__``): ``fabricsim train`` imports the training
family only, not the flow-level network (scipy) that ``traffic`` needs, so a one-off command
starts in a fraction of a second. ``from fabricsim.api import train`` works as usual.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any

# public name -> the module of this package that defines it
_HOMES: dict[str, str] = {
    "catalog_list": "catalogs",
    "catalog_show": "catalogs",
    "validate": "catalogs",
    "cluster": "cluster",
    "fabric_job": "fabric",
    "collective": "communication",
    "collective_op": "communication",
    "traffic": "communication",
    "infer": "inference",
    "serve": "inference",
    "simulate_infer": "inference",
    "plan_infer": "planning",
    "plan_train": "planning",
    "sweep": "sweeping",
    "sweep_runners": "sweeping",
    "variability": "simulation",
    "goodput": "goodput",
    "plan_goodput": "goodput_plan",
    "calibrate_nccl_tests": "calibration",
    "compare_rail_only": "cost",
    "cost": "cost",
    "measure": "measure",
    "size_sweep": "measure",
    "replay_chakra": "replay",
    "PacketTrafficSpec": "packet_traffic",
    "packet_traffic": "packet_traffic",
    "NetworkCollectiveSpec": "network_collective",
    "network_collective": "network_collective",
    "FIDELITIES": "training",
    "simulate_train": "training_simulated",
    "train": "training",
    "Fidelity": "training",
    "warm_up": "warmup",
}

__all__ = [
    "FIDELITIES",
    "Fidelity",
    "NetworkCollectiveSpec",
    "PacketTrafficSpec",
    "calibrate_nccl_tests",
    "catalog_list",
    "catalog_show",
    "cluster",
    "collective",
    "collective_op",
    "compare_rail_only",
    "cost",
    "fabric_job",
    "goodput",
    "infer",
    "measure",
    "network_collective",
    "packet_traffic",
    "plan_goodput",
    "plan_infer",
    "plan_train",
    "replay_chakra",
    "serve",
    "simulate_infer",
    "simulate_train",
    "size_sweep",
    "sweep",
    "sweep_runners",
    "traffic",
    "train",
    "validate",
    "variability",
    "warm_up",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'fabricsim.api' has no attribute {name!r}")
    value = getattr(import_module(f"fabricsim.api.{_HOMES[name]}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Api(types.ModuleType):
    """Keeps a public function when a submodule of the same name is imported (``api.goodput`` the
    function vs ``fabricsim.api.goodput`` the module, whose import would otherwise rebind the name)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _HOMES and isinstance(value, types.ModuleType):
            return  # the module stays reachable as sys.modules["fabricsim.api.<name>"]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Api


if TYPE_CHECKING:  # static checkers and IDEs see the real names
    from fabricsim.api.calibration import calibrate_nccl_tests
    from fabricsim.api.catalogs import catalog_list, catalog_show, validate
    from fabricsim.api.cluster import cluster
    from fabricsim.api.communication import collective, collective_op, traffic
    from fabricsim.api.cost import compare_rail_only, cost
    from fabricsim.api.fabric import fabric_job
    from fabricsim.api.goodput import goodput
    from fabricsim.api.goodput_plan import plan_goodput
    from fabricsim.api.inference import infer, serve, simulate_infer
    from fabricsim.api.measure import measure, size_sweep
    from fabricsim.api.network_collective import NetworkCollectiveSpec, network_collective
    from fabricsim.api.packet_traffic import PacketTrafficSpec, packet_traffic
    from fabricsim.api.planning import plan_infer, plan_train
    from fabricsim.api.replay import replay_chakra
    from fabricsim.api.simulation import variability
    from fabricsim.api.sweeping import sweep, sweep_runners
    from fabricsim.api.training import FIDELITIES, Fidelity, train
    from fabricsim.api.training_simulated import simulate_train
    from fabricsim.api.warmup import warm_up
