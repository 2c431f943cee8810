"""Decode op graphs and simulated TPOT: agrees with the analytic TPOT, tails ordered, max-of-many."""

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.engine.inference import InferScenario
from fabricsim.engine.simulate import execute
from fabricsim.engine.simulate_inference import simulate_decode
from fabricsim.engine.variability import Variability
from fabricsim.workload.inference import InferenceLayout
from fabricsim.workload.inference_graph import DecodePlan, build_decode_graph


@pytest.mark.parametrize("p", [1, 2, 4])
def test_full_pipeline_token_interval_is_pp_stage_times(p):
    plan = DecodePlan(pipeline_parallel=p, steps=6, compute_s=1.0, collectives_s=0.25, p2p_s=0.1 if p > 1 else 0.0)
    graph, done = build_decode_graph(plan)
    end = execute(graph, np.array([op.duration_s for op in graph.ops])).end_s
    intervals = np.diff(end[np.array(done)], axis=1)
    assert intervals[:, -1] == pytest.approx(np.full(p, p * (1.25 + plan.p2p_s)))


def _scenario(tp: int, pp: int = 1) -> InferScenario:
    model, system = catalog.load_model("llama3-70b"), catalog.load_system("dgx-h100")
    return InferScenario(model, system, InferenceLayout(tensor_parallel=tp, pipeline_parallel=pp), 1024, 256, batch=64)


@pytest.mark.parametrize(("tp", "pp"), [(8, 1), (4, 2)])
def test_simulated_tpot_matches_the_analytic_tpot(tp, pp):
    sim = simulate_decode(_scenario(tp, pp))
    assert sim.tpot_s == pytest.approx(sim.estimate.tpot_s, rel=1e-6)
    assert sim.tpot_s_p99 is None


def test_tpot_tails_are_ordered_and_grow_with_gpus_in_lock_step():
    v = Variability(compute_jitter=0.05, straggler_fraction=0.01, straggler_slowdown=0.2, seeds=30, seed=5)
    sims = {tp: simulate_decode(_scenario(tp), v) for tp in (2, 8)}
    for sim in sims.values():
        assert sim.tpot_s_p99 >= sim.tpot_s_p50 >= sim.tpot_s
    relative = {tp: sim.tpot_s_p99 / sim.tpot_s for tp, sim in sims.items()}
    assert relative[8] > relative[2]
