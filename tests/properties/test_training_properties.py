"""Physical bounds of the analytic training model over random layouts (hypothesis)."""

import itertools
import math

from hypothesis import given
from hypothesis import strategies as st

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import estimate_training, training_memory
from fabricsim.specs import ParallelLayout, Recompute

MODELS = {name: load_model(name) for name in ("gpt3-175b", "llama3-70b", "mixtral-8x22b")}
SYSTEMS = {name: load_system(name) for name in ("dgx-a100", "dgx-h100", "gb200-nvl72")}

layouts = st.fixed_dictionaries(
    {
        "model": st.sampled_from(sorted(MODELS)),
        "system": st.sampled_from(sorted(SYSTEMS)),
        "tp": st.sampled_from([1, 2, 4, 8]),
        "pp": st.sampled_from([1, 2, 4, 8]),
        "dp": st.sampled_from([1, 2, 4, 8]),
        "mb": st.sampled_from([1, 2]),
        "zero": st.sampled_from([0, 1, 2, 3]),
        "recompute": st.sampled_from(list(Recompute)),
        "sp": st.booleans(),
        "seq": st.sampled_from([1024, 2048, 4096, 8192]),
        "per_dp": st.sampled_from([8, 16, 64]),
    }
)


def run(case: dict, **override: int):
    values = {**case, **override}
    layout = ParallelLayout(
        tensor_parallel=values["tp"],
        pipeline_parallel=values["pp"],
        data_parallel=values["dp"],
        micro_batch_size=values["mb"],
        zero_stage=values["zero"],
        recompute=values["recompute"],
        sequence_parallel=values["sp"] and values["tp"] > 1,
    )
    batch = values["per_dp"] * values["dp"] * values["mb"]
    model, system = MODELS[values["model"]], SYSTEMS[values["system"]]
    return estimate_training(model, system, layout, batch, values["seq"]), layout, batch


@given(layouts)
def test_step_time_bounds_and_breakdown(case: dict) -> None:
    est, layout, _ = run(case)
    lower_bound_s = est.model_flops / (layout.gpus * SYSTEMS[case["system"]].device.peak(layout.dtype))
    assert est.step_time_s >= lower_bound_s
    assert math.isclose(sum(est.time.as_dict().values()), est.step_time_s, rel_tol=1e-9)
    assert all(value >= 0 for value in est.time.as_dict().values())
    assert est.mfu <= est.hfu <= 1.0


@given(layouts)
def test_memory_non_increasing_in_tp_pp_and_zero(case: dict) -> None:
    def memory(**override: int) -> float:
        _, layout, batch = run(case, **override)
        model, system = MODELS[case["model"]], SYSTEMS[case["system"]]
        return training_memory(model, system, layout, batch, case["seq"]).total

    base = {"tp": 1, "pp": 1, "zero": 0}
    tol = 1 + 1e-12
    for field, values in (("tp", [1, 2, 4, 8]), ("pp", [1, 2, 4, 8]), ("zero", [0, 1, 2, 3])):
        fixed = {k: v for k, v in base.items() if k != field}
        series = [memory(**fixed, **{field: v}) for v in values]
        assert all(b <= a * tol for a, b in itertools.pairwise(series)), (field, series)


@given(layouts)
def test_identical_across_runs(case: dict) -> None:
    first, _, _ = run(case)
    second, _, _ = run(case)
    assert first == second
