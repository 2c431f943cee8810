"""``--fidelity``, ``--trace`` and variability options of ``fabricsim train`` and ``infer`` (layer L11).

``--fidelity analytic`` (default) keeps the closed form; ``simulate`` runs the event-driven engine
with the analytic collective times; ``flow`` times collectives on the flow-level network.
``--trace out.json`` writes a Chrome/Perfetto timeline (atomically). Variability:
``--seeds N`` Monte-Carlo runs, ``--straggler FRACTION:SLOWDOWN`` (e.g. ``0.01:0.2``: 1% of GPUs
20% slower), ``--jitter SIGMA`` (kernel time jitter), ``--link-jitter SIGMA``, ``--ecmp-rehash``
(flow only), ``--seed N``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer

from fabricsim.cli.common import emit
from fabricsim.errors import FabricsimError

FIDELITY_OPTION = typer.Option("analytic", "--fidelity", help="analytic | simulate | flow")
TRACE_OPTION = typer.Option(None, "--trace", help="write a Chrome/Perfetto trace JSON of the simulated step")
DEFAULT_SEEDS = 20  # each run re-simulates the step (with DP replicas unfolded): keep the default cheap
SEEDS_OPTION = typer.Option(None, "--seeds", help=f"Monte-Carlo runs with variability (default {DEFAULT_SEEDS})")
STRAGGLER_OPTION = typer.Option(None, "--straggler", help="FRACTION:SLOWDOWN, e.g. 0.01:0.2")
JITTER_OPTION = typer.Option(0.0, "--jitter", help="per-kernel time jitter sigma (fraction, half-normal)")
LINK_JITTER_OPTION = typer.Option(0.0, "--link-jitter", help="per-transfer jitter sigma (fraction)")
ECMP_OPTION = typer.Option(False, "--ecmp-rehash", help="re-draw ECMP hashes every run (flow fidelity)")
SEED_OPTION = typer.Option(0, "--seed", help="seed of the variability runs")


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

    @property
    def wants_engine(self) -> bool:
        varied = self.seeds is not None or self.straggler or self.jitter or self.link_jitter or self.ecmp_rehash
        return self.fidelity != "analytic" or self.trace is not None or bool(varied)


def _straggler(text: str | None) -> tuple[float, float]:
    if text is None:
        return 0.0, 0.0
    try:
        fraction, slowdown = (float(part) for part in text.split(":"))
    except ValueError:
        problem = f"expected FRACTION:SLOWDOWN, got {text!r}"
        raise FabricsimError("straggler", problem, "e.g. --straggler 0.01:0.2") from None
    return fraction, slowdown


def variability(flags: SimulationFlags) -> Any:
    """The :class:`~fabricsim.engine.variability.Variability` the flags ask for, or None."""
    from fabricsim.engine.variability import Variability

    fraction, slowdown = _straggler(flags.straggler)
    seeds = flags.seeds if flags.seeds is not None else DEFAULT_SEEDS
    v = Variability(fraction, slowdown, flags.jitter, flags.link_jitter, flags.ecmp_rehash, seeds, flags.seed)
    v.validate()
    return v if v.active else None


def run_train(flags: SimulationFlags, train_args: tuple[Any, ...], layout: dict[str, Any], as_json: bool) -> None:
    """Run ``fabricsim train`` through the engine and print it; write the trace if asked."""
    from fabricsim import api
    from fabricsim.io.trace import write_trace
    from fabricsim.report.tables import simulated_train_table

    if flags.fidelity not in api.FIDELITIES:
        raise FabricsimError("fidelity", f"unknown fidelity {flags.fidelity!r}", "use analytic, simulate or flow")
    fidelity = "simulate" if flags.fidelity == "analytic" else flags.fidelity
    result = api.simulate_train(*train_args, fidelity=fidelity, variability=variability(flags), **layout)
    if flags.trace is not None:
        sim = result.simulation
        write_trace(flags.trace, sim.graph, sim.result.timeline, sim.result.comm)
    emit(result.to_json(), as_json, simulated_train_table)


def run_infer(flags: SimulationFlags, infer_args: tuple[Any, ...], options: dict[str, Any], as_json: bool) -> None:
    """Run ``fabricsim infer`` through the engine (fidelity simulate or flow) and print it; trace if asked."""
    from fabricsim import api
    from fabricsim.io.trace import write_trace
    from fabricsim.report.tables import simulated_infer_table

    if flags.fidelity not in api.FIDELITIES:
        raise FabricsimError("fidelity", f"unknown fidelity {flags.fidelity!r}", "use analytic, simulate or flow")
    fidelity = "simulate" if flags.fidelity == "analytic" else flags.fidelity
    model, system, gpus = infer_args
    result = api.simulate_infer(model, system, gpus, fidelity=fidelity, variability=variability(flags), **options)
    if flags.trace is not None:
        sim = result.simulation
        write_trace(flags.trace, sim.graph, sim.timeline)
    emit(result.to_json(), as_json, simulated_infer_table)
