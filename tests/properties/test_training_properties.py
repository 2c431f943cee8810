"""Physical bounds of the analytic training model over random layouts (hypothesis).

Draws from the whole catalog: every model x every system x bf16/fp8, with tensor, pipeline,
data, context and expert parallelism, interleaving, micro-batches, ZeRO and recomputation. Layouts
the model refuses (TP not dividing the heads, EP not dividing the experts, ...) are rejected, not
counted as passes.
"""

import itertools
import math

from hypothesis import assume, given
from hypothesis import strategies as st

from fabricsim.catalog import load_model, load_system, names
from fabricsim.engine.training.analytic import estimate_training, training_memory
from fabricsim.errors import FabricsimError
from fabricsim.specs import ParallelLayout, Recompute

MODELS = {name: load_model(name) for name in names("models")}
SYSTEMS = {name: load_system(name) for name in names("systems")}

layouts = st.fixed_dictionaries(
    {
        "model": st.sampled_from(sorted(MODELS)),
        "system": st.sampled_from(sorted(SYSTEMS)),
        "dtype": st.sampled_from(["bf16", "fp8"]),
        "tp": st.sampled_from([1, 2, 4, 8]),
        "pp": st.sampled_from([1, 2, 4, 8]),
        "dp": st.sampled_from([1, 2, 4, 8]),
        "cp": st.sampled_from([1, 1, 2, 4]),
        "ep": st.sampled_from([1, 1, 2, 4, 8]),
        "vpp": st.sampled_from([1, 1, 2]),
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
        context_parallel=values["cp"],
        expert_parallel=values["ep"],
        virtual_stages=values["vpp"],
        micro_batch_size=values["mb"],
        zero_stage=values["zero"],
        recompute=values["recompute"],
        sequence_parallel=values["sp"] and values["tp"] > 1,
        dtype=values["dtype"],
    )
    batch = values["per_dp"] * values["dp"] * values["mb"]
    model, system = MODELS[values["model"]], SYSTEMS[values["system"]]
    try:
        return estimate_training(model, system, layout, batch, values["seq"]), layout, batch
    except FabricsimError:
        assume(False)
        raise


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

    base = {"tp": 1, "pp": 1, "zero": 0, "cp": 1, "ep": 1, "vpp": 1}
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


@given(layouts)
def test_every_parallelism_that_communicates_costs_time(case: dict) -> None:
    """Exposed communication is positive where nothing can hide it: tensor-parallel collectives sit
    between dependent GEMMs (no TP overlap by default), expert all-to-all between routing and the
    expert GEMMs, and a pipeline has a fill/drain bubble and stage-to-stage sends."""
    est, layout, _ = run(case)
    t = est.time
    if layout.tensor_parallel > 1:
        assert t.tp_comm_s > 0
    if layout.expert_parallel > 1:
        assert t.ep_comm_s > 0
    if layout.pipeline_parallel > 1:
        assert t.pipeline_bubble_s > 0 and t.pp_comm_s > 0
