"""The simulated training step agrees with the analytic path on every training validation row.

With no variability and the analytic (uncontended) network, the engine runs the analytic model's
own costs through Megatron's schedules; the issue's bound is 3% on every row.
"""

import pytest

from fabricsim import api
from fabricsim.api.training import training_specs
from fabricsim.catalog import load_system
from fabricsim.engine.training.simulate import TrainingCase, simulate_training
from fabricsim.engine.variability import Variability
from fabricsim.errors import FabricsimError
from fabricsim.validation import training as suite
from fabricsim.validation.base import load_entries

AGREEMENT = 0.03


def _megatron_cases() -> dict[str, TrainingCase]:
    system = load_system(suite.SYSTEM)
    out = {}
    for row in load_entries(suite.MEGATRON_FILE):
        workload = row["workload"]
        estimate = suite._megatron_estimate(workload, system)
        model = suite.gpt_model("gpt", {**suite.GPT3_175B, **workload})
        out[row["id"]] = TrainingCase(
            model, system, estimate.layout, estimate.global_batch, estimate.seq_len, suite.MEGATRON_OPTIONS
        )
    return out


def _korthikanti_cases() -> dict[str, TrainingCase]:
    system = load_system(suite.SYSTEM)
    rows = [
        r
        for r in load_entries(suite.KORTHIKANTI_FILE)
        if r["id"].split("-")[1] in suite.KORTHIKANTI_SCHEDULE and "tensor_parallel" in r["workload"]
    ]
    dims = {r["id"].split("-")[1]: r["workload"] for r in rows if "hidden_size" in r["workload"]}
    out = {}
    for row in rows:
        key = row["id"].split("-")[1]
        estimate = suite._korthikanti_estimate(key, dims[key], row["workload"], system)
        model = suite.gpt_model(f"gpt-{key}", dims[key])
        out[row["id"]] = TrainingCase(
            model, system, estimate.layout, estimate.global_batch, estimate.seq_len, suite.KORTHIKANTI_OPTIONS
        )
    return out


CASES = {**_megatron_cases(), **_korthikanti_cases()}


def _configs() -> dict[str, TrainingCase]:
    """One entry per distinct configuration (rows that report two metrics of one run share it)."""
    groups: list[tuple[list[str], TrainingCase]] = []
    for case_id, case in sorted(CASES.items()):
        same = next((ids for ids, other in groups if other == case), None)
        if same is None:
            groups.append(([case_id], case))
        else:
            same.append(case_id)
    return {"+".join(ids): case for ids, case in groups}


CONFIGS = _configs()


@pytest.mark.parametrize("rows", sorted(CONFIGS))
def test_simulation_agrees_with_analytic_within_3_percent(rows):
    sim = simulate_training(CONFIGS[rows], lambda seed: None)
    assert abs(sim.step_time_s / sim.estimate.step_time_s - 1.0) <= AGREEMENT


def test_the_suite_covers_both_papers():
    assert sum(k.startswith("megatron") for k in CASES) >= 10
    assert sum(k.startswith("korthikanti") for k in CASES) >= 8


def test_stragglers_on_a_validation_row_give_ordered_tails():
    case = CASES["megatron-sc21-t1-18b"]
    v = Variability(straggler_fraction=0.02, straggler_slowdown=0.1, compute_jitter=0.02, seeds=8, seed=1)
    sim = simulate_training(case, lambda seed: None, v)
    assert sim.tail is not None
    assert sim.tail.p99_s >= sim.tail.p50_s >= sim.tail.nominal_s
    assert sim.tail.nominal_s == pytest.approx(sim.step_time_s)
    assert sim.graph.folded["data_parallel_replicas_simulated"] == case.layout.data_parallel


@pytest.mark.parametrize(
    ("model", "layout"),
    [
        ("llama3-70b", {"tp": 8, "pp": 4, "zero": 3}),
        ("llama3-70b", {"tp": 8, "pp": 4, "zero": 1, "vpp": 2}),
        ("mixtral-8x22b", {"tp": 4, "pp": 2, "ep": 8, "zero": 1}),
        ("mixtral-8x22b", {"tp": 4, "pp": 2, "vpp": 2, "ep": 8, "zero": 1, "a2a_overlap": True}),
    ],
)
def test_zero_interleaving_and_experts_stay_close_to_analytic(model, layout):
    """Beyond the validation rows: ZeRO-3 gathers, ZeRO-1 parameter gathers overlapped with the
    first forward, interleaved schedules (per-chunk gradient buckets leave earlier than the closed
    form assumes) and expert all-to-alls."""
    result = api.simulate_train(model, "dgx-h100", 256, 256, 4096, **layout).to_json()
    assert result["step_time_s"] == pytest.approx(result["analytic_step_time_s"], rel=AGREEMENT)


def _llama_case(global_batch: int) -> TrainingCase:
    model_spec, system_spec, layout_spec = training_specs("llama3-8b", "dgx-h100", 8, {"pp": 2})
    return TrainingCase(model_spec, system_spec, layout_spec, global_batch, 512)


def test_a_huge_batch_is_refused_before_its_graph_is_built():
    """Issue 27: ``--global-batch 16777216 --fidelity simulate`` built a graph of 4M micro-batches."""
    with pytest.raises(FabricsimError) as info:
        simulate_training(_llama_case(16_777_216), lambda seed: None)
    assert str(info.value).startswith(
        "global-batch: 4194304 micro-batches x 2 pipeline chunks x 1 replicas x 1 runs = 8388608 simulated passes"
        " exceeds the cap 131072 (lower --global-batch"
    )
    assert "FABRICSIM_MAX_SIMULATED_PASSES" in str(info.value) and "\n" not in str(info.value)


def test_the_simulated_passes_cap_counts_replicas_and_runs(monkeypatch):
    case = _llama_case(64)  # dp 4: 16 micro-batches on 2 stages
    monkeypatch.setenv("FABRICSIM_MAX_SIMULATED_PASSES", "32")
    assert simulate_training(case, lambda seed: None).step_time_s > 0
    monkeypatch.setenv("FABRICSIM_MAX_SIMULATED_PASSES", "31")
    with pytest.raises(FabricsimError, match=r"= 32 simulated passes exceeds the cap 31"):
        simulate_training(case, lambda seed: None)
    stragglers = Variability(straggler_fraction=0.1, straggler_slowdown=0.1, seeds=3, seed=1)  # 4 replicas, 1+4 runs
    monkeypatch.setenv("FABRICSIM_MAX_SIMULATED_PASSES", str(16 * 2 * 4 * 5))
    assert simulate_training(case, lambda seed: None, stragglers).tail is not None
    monkeypatch.setenv("FABRICSIM_MAX_SIMULATED_PASSES", str(16 * 2 * 4 * 5 - 1))
    with pytest.raises(FabricsimError, match=r"x 4 replicas x 5 runs = 640 simulated passes"):
        simulate_training(case, lambda seed: None, stragglers)
