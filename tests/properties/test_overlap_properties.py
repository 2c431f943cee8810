"""Why the planner may turn free overlaps on: in this model no overlap makes a step slower or
bigger (hypothesis over layouts and all 32 on/off combinations of the five switches)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.errors import FabricsimError
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.workload.training import TrainingOptions

MODELS = {name: load_model(name) for name in ("gpt3-175b", "mixtral-8x22b", "deepseek-v3")}
SYSTEM = load_system("dgx-h100")
SWITCHES = ("overlap_grad_reduce", "overlap_tp_comm", "overlap_param_gather", "a2a_overlap")

cases = st.fixed_dictionaries(
    {
        "model": st.sampled_from(sorted(MODELS)),
        "tp": st.sampled_from([1, 2, 8]),
        "pp": st.sampled_from([4, 8]),
        "dp": st.sampled_from([8, 16]),
        "ep": st.sampled_from([1, 8, 16]),
        "zero": st.sampled_from([0, 1, 3]),
        "recompute": st.sampled_from(list(Recompute)),
        "dispatcher": st.sampled_from(["alltoall", "deepep"]),
    }
)


@settings(max_examples=25, deadline=None)
@given(cases)
def test_every_overlap_is_free(case: dict) -> None:
    model = MODELS[case["model"]]
    etp = 1 if case["ep"] * case["tp"] > case["tp"] * case["dp"] else None
    layout = ParallelLayout(
        tensor_parallel=case["tp"],
        pipeline_parallel=case["pp"],
        data_parallel=case["dp"],
        expert_parallel=case["ep"] if case["model"] != "gpt3-175b" else 1,
        zero_stage=case["zero"],
        recompute=case["recompute"],
        sequence_parallel=case["tp"] > 1,
        expert_tensor_parallel=etp if case["model"] != "gpt3-175b" else None,
    )
    results = {}
    for flags in itertools.product((False, True), repeat=len(SWITCHES)):
        options = TrainingOptions(moe_dispatcher=case["dispatcher"], **dict(zip(SWITCHES, flags, strict=True)))
        try:
            results[flags] = training_context(model, SYSTEM, options).estimate(layout, 256, 4096)
        except FabricsimError:
            return  # an invalid layout for this model: nothing to compare
    best = results[(True,) * len(SWITCHES)]
    for estimate in results.values():
        assert best.step_time_s <= estimate.step_time_s * (1 + 1e-12)
        assert best.memory.total == estimate.memory.total
