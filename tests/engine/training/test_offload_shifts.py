"""The planner's factored offload sizing agrees with the per-layout placement (issue 27 speed work).

``state_shifts`` (per ZeRO stage) and ``activation_shift`` (per virtual-stage count) must be the
class shifts of ``resident_bytes`` for every layout, and ``fitting_choices`` must keep exactly the
offload choices with which ``offload_memory`` fits the layout in HBM and on the tier, at its HBM bytes.
"""

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.engine.training.offload import activation_shift, resident_bytes, state_shifts
from fabricsim.planner.offload import by_tier, offload_choices
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.transformer.memory_tiers import class_shifts

BATCH, SEQ = 3072, 2048
LAYOUTS = [
    ParallelLayout(8, 1, 384, 1, 1, 1, 8, 1, Recompute.SELECTIVE, True, "bf16"),
    ParallelLayout(8, 4, 96, 1, 1, 32, 8, 2, Recompute.NONE, True, "bf16"),
    ParallelLayout(4, 8, 96, 1, 1, 1, 32, 3, Recompute.FULL, True, "bf16"),  # one micro-batch per step
    ParallelLayout(2, 16, 96, 1, 1, 2, 2, 0, Recompute.FULL, False, "bf16"),
    ParallelLayout(8, 8, 48, 1, 1, 1, 1, 3, Recompute.SELECTIVE, True, "bf16"),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_factored_shifts_are_the_class_shifts(layout: ParallelLayout) -> None:
    ctx = training_context(load_model("megatron-1t"), load_system("dgx-a100"))
    microbatches = ctx.microbatches(layout, BATCH, SEQ)
    entry = ctx.stage(layout, SEQ)
    base = ctx.memory(layout, BATCH, SEQ)
    states = (base.weights, base.gradients, base.optimizer_states)
    factored = (*state_shifts(layout, entry, states, microbatches), activation_shift(entry, base.activations))
    assert factored == class_shifts(resident_bytes(layout, entry, base, microbatches))


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_fitting_choices_are_those_the_placement_fits(layout: ParallelLayout) -> None:
    system = load_system("dgx-a100")
    ctx = training_context(load_model("megatron-1t"), system)
    choices = offload_choices(system)
    base = ctx.memory(layout, BATCH, SEQ)
    fitting = dict(ctx.fitting_offloads(layout, base, BATCH, SEQ, by_tier(choices)))
    capacity = system.device.hbm_capacity_bytes
    for choice in choices:
        memory, tier = ctx.offload_memory(layout, BATCH, SEQ, choice)
        fits = memory.total <= capacity and tier.fits
        assert (choice in fitting) == fits, choice
        if fits:
            assert fitting[choice] == pytest.approx(memory.total, rel=1e-12)
