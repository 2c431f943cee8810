"""Training steps through the event-driven engine: fidelity simulate or flow (public API, layer L9).

Apart from :mod:`fabricsim.api.training` so that an analytic ``train`` never imports the engine's
simulator, numpy or the flow-level network.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fabricsim.api.fabric import FabricOptions, check_fabric_options, job_system, network_report, seat, with_nic
from fabricsim.api.training import SETTINGS, train, training_options, training_specs
from fabricsim.cost.energy import retime_train_energy
from fabricsim.engine.training.simulate import TrainingCase, TrainingSimulation, simulate_training, step_breakdown
from fabricsim.engine.variability import Variability
from fabricsim.errors import FabricsimError
from fabricsim.metrics import SimulatedTrainResult, TrainResult
from fabricsim.specs.inputs import Fidelity, SimFidelity, edge

_ANALYTIC_ONLY = "drop --fidelity, --trace and the variability options"


@edge
def simulate_train(
    model: str,
    system: str,
    gpus: int,
    global_batch: int,
    seq_len: int,
    *,
    fidelity: SimFidelity = Fidelity.SIMULATE,
    variability: Variability | None = None,
    topology: str | None = None,
    placement: str | None = None,
    nic: str | None = None,
    background: str | None = None,
    transport: str | None = None,
    ber: str | None = None,
    cc_params: tuple[str, ...] | None = None,
    **layout: Any,
) -> SimulatedTrainResult:
    """One training step through the event-driven engine; same inputs as :func:`train`.

    ``fidelity`` is ``simulate`` (collectives timed by the analytic collective model on an
    uncontended fabric), ``flow`` or ``packet``: every collective of the step runs as its flows on
    the placed fabric, with whatever else is in flight (:mod:`fabricsim.engine.fabric_loop`), on the
    max-min fair flow model or the packet model. ``topology``, ``placement``, ``nic`` and
    ``background`` choose that fabric (:mod:`fabricsim.api.fabric`; flow or packet only), ``transport``
    (roce | ib | uet), ``ber`` (bit-error rate) and ``cc_params`` (``NAME=VALUE`` packet parameters,
    e.g. traffic classes) its packet transport (packet only).
    ``variability`` adds seeded stragglers, jitter and ECMP re-hashing and gives P50/P99 step times.
    ``layout`` takes :func:`train`'s keywords (tp, pp, dp, ..., and the framework settings).
    """
    for key in ("offload", "offload_tier"):  # train's keywords, not the event-driven engine's
        if layout.pop(key, None) is not None:
            raise FabricsimError(key.replace("_", "-"), "is costed by the analytic fidelity only", _ANALYTIC_ONLY)
    choices = FabricOptions(topology, placement, nic, background, transport, ber, cc_params)
    check_fabric_options(choices, fidelity, variability)
    base = train(model, system, gpus, global_batch, seq_len, **layout)
    shape = {key: value for key, value in layout.items() if key not in SETTINGS}
    model_spec, system_spec, layout_spec = training_specs(model, system, gpus, shape)
    options = training_options(**dict(base.options))  # type: ignore[arg-type]  # as the analytic step ran
    system_spec = job_system(with_nic(system_spec, choices.nic), gpus, choices.topology)  # an OCS slice: its torus
    case = TrainingCase(model_spec, system_spec, layout_spec, global_batch, seq_len, options)
    if fidelity.on_fabric:
        placed, on_fabric = seat(system_spec, gpus, fidelity, choices, variability)
        sim = simulate_training(case, lambda run: None, variability, on_fabric)
        network = network_report(placed, sim.job, sim.fabric_run, sim.result.comm.exposed_s)  # type: ignore[arg-type]
        return simulated_train_result(base, sim, fidelity.value, network)
    sim = simulate_training(case, lambda run: None, variability)
    return simulated_train_result(base, sim, fidelity.value)


def simulated_train_result(
    base: TrainResult, sim: TrainingSimulation, fidelity: str, network: dict[str, Any] | None = None
) -> SimulatedTrainResult:
    ratio = sim.estimate.step_time_s / sim.step_time_s
    train_result = dataclasses.replace(
        base,
        step_time_s=sim.step_time_s,
        tokens_per_s=base.tokens_per_s * ratio,
        model_tflops_per_gpu=base.model_tflops_per_gpu * ratio,
        hardware_tflops_per_gpu=base.hardware_tflops_per_gpu * ratio,
        mfu=base.mfu * ratio,
        hfu=base.hfu * ratio,
        time_breakdown_s=tuple(step_breakdown(sim).items()),
        fidelity=fidelity,
    )
    train_result = retime_train_energy(train_result)  # same power, the simulated step time
    tail = sim.tail
    return SimulatedTrainResult(
        train=train_result,
        analytic_step_time_s=sim.estimate.step_time_s,
        step_time_s_p50=tail.p50_s if tail is not None else None,
        step_time_s_p99=tail.p99_s if tail is not None else None,
        seeds=len(tail.samples_s) if tail is not None else 0,
        exposed_comm_s=tuple(sim.result.comm.exposed_s.items()),
        comm_busy_s=tuple(sim.result.comm.busy_s.items()),
        folded=tuple(sim.result.folded.items()),
        simulated_ops=sim.result.ops,
        simulation=sim,
        network=network,
    )
