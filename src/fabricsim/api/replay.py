"""Replay a Chakra execution trace in the event engine (public API, layer L9).

The CLI reads the files (:mod:`fabricsim.io.chakra`) and passes the ranks here. Ops keep the
trace's measured ``duration_micros``; with ``system``, ops without one are timed by the model:
compute as ``num_ops`` at the device's dense BF16 peak (an upper bound on speed: Chakra gives no
shape, so no kernel efficiency can be looked up), collectives by the analytic collective model on
``ranks`` GPUs of the system.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricsim import catalog
from fabricsim.collectives import CollectiveOp
from fabricsim.collectives.times import CollectiveTimes
from fabricsim.engine.simulate import DeadlockError, SimulationResult, simulate
from fabricsim.errors import FabricsimError
from fabricsim.specs import Dtype
from fabricsim.workload.chakra import ChakraRank, graph_from_chakra
from fabricsim.workload.graph import OpGraph


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """A replayed trace: the step time (s) is the engine's makespan; busy/exposed comm per op category."""

    step_time_s: float
    ranks: int
    ops: int
    system: str | None
    comm_busy_s: dict[str, float]
    exposed_comm_s: dict[str, float]
    notes: tuple[str, ...]
    graph: OpGraph = field(compare=False, repr=False)
    simulation: SimulationResult = field(compare=False, repr=False)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "step_time_s": self.step_time_s,
            "ranks": self.ranks,
            "ops": self.ops,
            "workload": "chakra",
            "comm_busy_s": self.comm_busy_s,
            "exposed_comm_s": self.exposed_comm_s,
            "fidelity": "simulate",
        }
        if self.system is not None:
            out["system"] = self.system
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def replay_chakra(ranks: list[ChakraRank], *, system: str | None = None) -> ReplayResult:
    """Run the trace's op graph (see :func:`fabricsim.workload.chakra.graph_from_chakra`)."""
    comm_time, flops = None, None
    if system is not None:
        spec = catalog.load_system(system)
        spec.check_gpu_count(len(ranks), "ranks")
        times = CollectiveTimes(spec)
        flops = spec.device.peak(Dtype.BF16)

        def comm_time(op: str, size_bytes: int, group: int) -> float:
            return times.time_s(CollectiveOp(op), size_bytes, group, 1)

    graph = graph_from_chakra(ranks, comm_time, flops)
    try:
        sim = simulate(graph, None)
    except DeadlockError as exc:  # e.g. two ranks that each wait to receive before they send
        raise FabricsimError("trace", f"the trace cannot finish: {exc}", "check its send/recv pairs") from None
    return ReplayResult(
        sim.step_time_s,
        len(ranks),
        sim.ops,
        system,
        sim.comm.busy_s,
        sim.comm.exposed_s,
        tuple(graph.notes),
        graph,
        sim,
    )
