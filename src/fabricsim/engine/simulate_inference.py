"""Simulated decode: TPOT per token from an op graph, with P50/P99 under variability (layer L6).

The costs are the analytic inference engine's (:func:`fabricsim.engine.inference.infer_estimate`:
mean decode step over the output's context lengths, and its communication model for the
collectives and pipeline hand-off of one micro-batch); :mod:`fabricsim.workload.inference_graph`
lays them out over ``DECODE_STEPS`` steps of ``pp`` micro-batches. A token's TPOT is the time
between consecutive completions of its micro-batch at the last stage. Without variability the
simulated TPOT equals the analytic one (a full pipeline); with stragglers and jitter the per-token
distribution over steps and seeds gives P50/P99 TPOT (a token waits for the slowest GPU of every
stage it crosses).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.engine.inference import InferEstimate, InferScenario, infer_estimate
from fabricsim.engine.simulate import Timeline, execute
from fabricsim.engine.variability import Variability, perturbed
from fabricsim.workload.graph import OpGraph
from fabricsim.workload.inference import CommunicationModel
from fabricsim.workload.inference_graph import DecodePlan, build_decode_graph

DECODE_STEPS = 32  # steps simulated per run: enough for P99 over steps x micro-batches x seeds


def decode_plan(scenario: InferScenario, estimate: InferEstimate, steps: int = DECODE_STEPS) -> DecodePlan:
    """Per micro-batch and stage costs of the mean decode step of ``estimate``."""
    layout = scenario.layout
    p = layout.pipeline_parallel
    comm = CommunicationModel(scenario.system, layout, scenario.model)
    tokens = estimate.batch / p
    collectives_s, p2p_s = comm.time_s(tokens), comm.p2p_s(tokens)
    stage_s = estimate.decode.total_s / p
    return DecodePlan(
        pipeline_parallel=p,
        steps=steps,
        compute_s=max(stage_s - collectives_s - p2p_s, 0.0),
        collectives_s=collectives_s,
        p2p_s=p2p_s,
        stage_gpus=layout.stage_gpus,
        layers=max(1, scenario.model.num_hidden_layers // p),
    )


@dataclass(frozen=True, slots=True)
class DecodeSimulation:
    """Simulated TPOT (s): the mean without variability, and per-token percentiles with it."""

    estimate: InferEstimate
    tpot_s: float
    tpot_s_p50: float | None
    tpot_s_p99: float | None
    tokens_sampled: int
    graph: OpGraph
    timeline: Timeline

    @property
    def ops(self) -> int:
        return len(self.graph.ops)


def _intervals(end_s: np.ndarray, token_done: list[list[int]]) -> np.ndarray:
    """Times between consecutive tokens of each micro-batch (the first step's latency excluded)."""
    done = end_s[np.array(token_done)]  # [micro-batch, step]
    return np.diff(done, axis=1).ravel()


def simulate_decode(scenario: InferScenario, variability: Variability | None = None) -> DecodeSimulation:
    """TPOT of ``scenario`` from the event-driven engine (analytic collective times)."""
    estimate = infer_estimate(scenario)
    graph, token_done = build_decode_graph(decode_plan(scenario, estimate))
    nominal = np.array([op.duration_s for op in graph.ops])
    timeline = execute(graph, nominal)
    base = _intervals(timeline.end_s, token_done)
    tpot = float(base[-len(token_done) :].mean())  # steady state: the last step of every micro-batch
    if variability is None or not variability.active:
        return DecodeSimulation(estimate, tpot, None, None, 0, graph, timeline)
    variability.validate()
    samples = [
        _intervals(execute(graph, perturbed(graph, nominal, variability, run)).end_s, token_done)
        for run in range(variability.seeds)
    ]
    pooled = np.concatenate(samples)
    p50, p99 = (float(np.quantile(pooled, q)) for q in (0.5, 0.99))
    return DecodeSimulation(estimate, tpot, p50, p99, int(pooled.size), graph, timeline)
