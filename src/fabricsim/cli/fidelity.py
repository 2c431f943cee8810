"""``--fidelity``, ``--trace`` and variability options of ``fabricsim train`` and ``infer`` (layer L11).

``--fidelity analytic`` (default) keeps the closed form; ``simulate`` runs the event-driven engine
with the analytic collective times; ``flow`` and ``packet`` run the step's collectives on the fabric
(``--topology``, ``--placement``, ``--nic``, ``--background`` choose it; they need flow or packet;
``--transport`` and ``--ber`` its packet transport, packet only).
``--trace out.json`` writes a Chrome/Perfetto timeline (atomically, only over nothing or a regular
file, into an existing folder; the path is checked before the simulation runs). Variability:
``--seeds N`` Monte-Carlo runs, ``--straggler FRACTION:SLOWDOWN`` (e.g. ``0.01:0.2``: 1% of GPUs
20% slower), ``--jitter SIGMA`` (kernel time jitter), ``--link-jitter SIGMA``, ``--ecmp-rehash``
(flow only), ``--seed N``. The options are declared once in :mod:`fabricsim.cli.options`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fabricsim.cli.common import emit
from fabricsim.cli.progress import working
from fabricsim.errors import parse_choice


@dataclass(frozen=True, slots=True)
class SimulationFlags:
    """The simulation options as given on the command line."""

    fidelity: str = "analytic"
    trace: str | None = None
    seeds: int | None = None
    straggler: str | None = None
    jitter: float = 0.0
    link_jitter: float = 0.0
    ecmp_rehash: bool = False
    seed: int = 0
    # --topology, --placement, --nic, --background, --transport, --ber, --cc-param
    fabric: dict[str, str | None] = field(default_factory=dict)

    @property
    def wants_engine(self) -> bool:
        varied = self.seeds is not None or self.straggler or self.jitter or self.link_jitter or self.ecmp_rehash
        chose_fabric = any(value is not None for value in self.fabric.values())
        return self.fidelity != "analytic" or self.trace is not None or bool(varied) or chose_fabric


def variability(flags: SimulationFlags) -> Any:
    """The seeded variability the flags ask for (checked by the API), or None."""
    from fabricsim import api

    return api.variability(flags.straggler, flags.jitter, flags.link_jitter, flags.ecmp_rehash, flags.seeds, flags.seed)


def _fidelity(flags: SimulationFlags) -> Any:
    from fabricsim import api

    chosen = parse_choice("fidelity", flags.fidelity, api.Fidelity)
    return api.Fidelity.SIMULATE if chosen is api.Fidelity.ANALYTIC else chosen


def run_train(flags: SimulationFlags, inputs: dict[str, Any], as_json: bool) -> None:
    """Run ``fabricsim train`` through the engine and print it; write the trace if asked."""
    from fabricsim import api
    from fabricsim.io.results import check_output_path
    from fabricsim.io.trace import write_trace

    fidelity = _fidelity(flags)
    if flags.trace is not None:
        check_output_path(flags.trace, "trace")
    with working(f"simulating the training step ({fidelity.value})"):
        result = api.simulate_train(**inputs, **flags.fabric, fidelity=fidelity, variability=variability(flags))
    if flags.trace is not None:
        sim = result.simulation
        write_trace(flags.trace, sim.graph, sim.result.timeline, sim.result.comm)
    emit(result.to_json(), as_json, "simulated_train_table")


def run_infer(flags: SimulationFlags, inputs: dict[str, Any], as_json: bool) -> None:
    """Run ``fabricsim infer`` through the engine (fidelity simulate or flow) and print it; trace if asked."""
    from fabricsim import api
    from fabricsim.io.results import check_output_path
    from fabricsim.io.trace import write_trace

    fidelity = _fidelity(flags)
    if flags.trace is not None:
        check_output_path(flags.trace, "trace")
    with working(f"simulating the inference steps ({fidelity.value})"):
        result = api.simulate_infer(**inputs, **flags.fabric, fidelity=fidelity, variability=variability(flags))
    if flags.trace is not None:
        sim = result.simulation
        write_trace(flags.trace, sim.graph, sim.timeline)
    emit(result.to_json(), as_json, "simulated_infer_table")
