"""The public Python API (layer L9): the only place catalog names become specs.

Every function accepts catalog names or file paths, validates the inputs into specs, calls the
library, and returns an immutable result whose ``to_json()`` is the JSON contract of DESIGN.md.
One module per family of questions; everything public is re-exported here (``fabricsim.api.train``).
"""

from fabricsim.api.calibration import calibrate_nccl_tests
from fabricsim.api.catalogs import catalog_list, catalog_show, validate
from fabricsim.api.communication import collective, traffic
from fabricsim.api.cost import compare_rail_only, cost
from fabricsim.api.goodput import goodput
from fabricsim.api.goodput_plan import plan_goodput
from fabricsim.api.inference import infer, serve, simulate_infer
from fabricsim.api.measure import measure, size_sweep
from fabricsim.api.packet_traffic import PacketTrafficSpec, packet_traffic
from fabricsim.api.planning import plan_infer, plan_train
from fabricsim.api.replay import replay_chakra
from fabricsim.api.sweeping import sweep, sweep_runners
from fabricsim.api.training import FIDELITIES, simulate_train, train

__all__ = [
    "FIDELITIES",
    "PacketTrafficSpec",
    "calibrate_nccl_tests",
    "catalog_list",
    "catalog_show",
    "collective",
    "compare_rail_only",
    "cost",
    "goodput",
    "infer",
    "measure",
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
]
