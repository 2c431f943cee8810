"""Simulated inference: TTFT and TPOT agree with the analytic path, flow timing, tails."""

import pytest

from fabricsim import catalog
from fabricsim.engine.fabric_loop import system_fabric
from fabricsim.engine.inference.analytic import InferScenario, KvBudgetPolicy
from fabricsim.engine.inference.simulate import MAX_PREFILL_CHUNKS, simulate_inference
from fabricsim.engine.inference.step import LayoutRequest, resolve_layout
from fabricsim.engine.variability import Variability

CASES = {
    "llama3-70b tp8": ("llama3-70b", "dgx-h100", LayoutRequest(8, 8, 1, None, None, None), 64),
    "mixtral-8x22b tp8 ep8": ("mixtral-8x22b", "h800", LayoutRequest(8, 8, 1, 8, None, None), 64),
    "deepseek-v3 ep32 fp8": ("deepseek-v3", "h800", LayoutRequest(32, 1, 1, 32, "fp8", None), 256),
}


def _scenario(name: str, **kw) -> InferScenario:
    model_name, system_name, request, batch = CASES[name]
    model, system = catalog.load_model(model_name), catalog.load_system(system_name)
    layout = resolve_layout(model, system, request)
    return InferScenario(model, system, layout, kw.pop("input_len", 1024), 256, batch, **kw)


def _llama(tp: int, pp: int) -> InferScenario:
    model, system = catalog.load_model("llama3-70b"), catalog.load_system("dgx-h100")
    layout = resolve_layout(model, system, LayoutRequest(8, tp, pp, None, None, None))
    return InferScenario(model, system, layout, 1024, 256, 64)


@pytest.mark.parametrize("name", list(CASES))
def test_ttft_and_tpot_agree_with_the_analytic_path(name):
    sim = simulate_inference(_scenario(name))
    assert sim.ttft_s == pytest.approx(sim.estimate.ttft_s, rel=0.03)
    assert sim.tpot_s == pytest.approx(sim.estimate.tpot_s, rel=0.03)
    assert sim.tpot_s_p99 is None and sim.ttft_s_p99 is None
    assert any(op.category == "prefill" for op in sim.graph.ops)
    if "ep" in name:
        assert any(op.category == "ep-all-to-all" for op in sim.graph.ops)


def test_pipeline_adds_only_its_fill_to_ttft():
    sim = simulate_inference(_llama(4, 2))
    assert sim.tpot_s == pytest.approx(sim.estimate.tpot_s, rel=1e-6)
    chunks = 8  # 64 x 1024 prompt tokens in 8192-token chunks, 2 micro-batches each
    assert sim.ttft_s == pytest.approx(sim.estimate.ttft_s * (1 + 1 / (2 * chunks)), rel=1e-3)


def test_many_prefill_chunks_are_folded():
    scenario = _scenario("llama3-70b tp8", kv_policy=KvBudgetPolicy(max_step_tokens=512))
    sim = simulate_inference(scenario)
    assert sim.graph.folded["prefill_chunks_per_simulated_chunk"] == 2 * 64 // MAX_PREFILL_CHUNKS
    assert sim.ttft_s == pytest.approx(sim.estimate.ttft_s, rel=1e-6)


@pytest.mark.parametrize("name", ["llama3-70b tp8", "deepseek-v3 ep32 fp8"])
def test_flow_fidelity_never_beats_the_uncontended_times(name):
    scenario = _scenario(name)
    gpus = scenario.layout.replicas * scenario.layout.replica_gpus
    nominal = simulate_inference(scenario)
    flow = simulate_inference(scenario, None, None, system_fabric(scenario.system, gpus))
    assert flow.ttft_s >= nominal.ttft_s * 0.99 and flow.tpot_s >= nominal.tpot_s * 0.99


def test_a_slower_network_slows_the_collectives_only():
    scenario = _scenario("llama3-70b tp8")
    nominal = simulate_inference(scenario)
    slow = simulate_inference(scenario, None, lambda run: (lambda payload: 1.0))  # 1 s per collective
    comm_s = nominal.estimate.prefill.communication_s
    assert slow.ttft_s > nominal.ttft_s + comm_s  # each all-reduce now takes far longer
    assert slow.tpot_s > nominal.tpot_s


def test_tails_are_ordered_and_grow_with_gpus_in_lock_step():
    v = Variability(compute_jitter=0.05, straggler_fraction=0.01, straggler_slowdown=0.2, seeds=30, seed=5)
    sims = {tp: simulate_inference(_llama(tp, 1), v) for tp in (2, 8)}
    for sim in sims.values():
        assert sim.tpot_s_p99 >= sim.tpot_s_p50 >= sim.tpot_s
        assert sim.ttft_s_p99 >= sim.ttft_s_p50 >= sim.ttft_s
    relative = {tp: sim.tpot_s_p99 / sim.tpot_s for tp, sim in sims.items()}
    assert relative[8] > relative[2]


# Same seed, same result: two processes with different hash seeds print the same bytes
# (tests/test_determinism.py, "infer-simulate-jitter").
