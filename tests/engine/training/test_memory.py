"""Memory assembly of a training layout: model states come from the one ZeRO rule."""

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.engine.training.memory import memory_breakdown
from fabricsim.specs import ParallelLayout
from fabricsim.transformer.memory import WEIGHT_BYTES, state_bytes

H100 = load_system("dgx-h100")


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
@pytest.mark.parametrize(("model", "tp", "ep"), [("gpt3-175b", 8, 1), ("deepseek-v3", 1, 8)])
def test_states_are_state_bytes_of_the_stage(model: str, tp: int, ep: int, zero: int) -> None:
    spec = load_model(model)
    ctx = training_context(spec, H100)
    layout = ParallelLayout(
        tensor_parallel=tp, pipeline_parallel=16, data_parallel=16, expert_parallel=ep, zero_stage=zero
    )
    entry = ctx.stage(layout, 4096)
    memory = memory_breakdown(layout, entry, 32)
    states = state_bytes(entry.dense_params, entry.expert_params, (zero, 16, 16 // ep), 4.0)
    gathered = 2.0 * WEIGHT_BYTES * (entry.dense_params + entry.expert_params) / entry.layers if zero == 3 else 0.0
    assert memory.weights == states.weights + gathered
    assert (memory.gradients, memory.optimizer_states) == (states.gradients, states.optimizer)
    assert memory == ctx.memory(layout, 512, 4096)
