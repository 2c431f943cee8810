"""Physical bounds of offloaded training steps over random layouts and offload choices (hypothesis)."""

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import training_context
from fabricsim.specs import ParallelLayout, Recompute, SystemSpec
from fabricsim.specs.memory_tier import OFFLOAD_ORDER, MemoryTierKind, OffloadSpec

MODELS = {name: load_model(name) for name in ("gpt3-175b", "llama3-70b", "mixtral-8x22b")}
SYSTEMS = {"dgx-a100": MemoryTierKind.HOST, "dgx-h100": MemoryTierKind.HOST, "gb200-nvl72": MemoryTierKind.GRACE}
CLASS_SETS = [c for size in (1, 2, 3) for c in itertools.combinations(OFFLOAD_ORDER, size)]

cases = st.fixed_dictionaries(
    {
        "model": st.sampled_from(sorted(MODELS)),
        "system": st.sampled_from(sorted(SYSTEMS)),
        "tp": st.sampled_from([1, 2, 8]),
        "pp": st.sampled_from([1, 2, 4]),
        "dp": st.sampled_from([1, 4, 8]),
        "mb": st.sampled_from([1, 2]),
        "zero": st.sampled_from([0, 1, 2, 3]),
        "recompute": st.sampled_from(list(Recompute)),
        "per_dp": st.sampled_from([1, 4, 16]),
        "classes": st.sampled_from(CLASS_SETS),
        "overlap": st.booleans(),
    }
)


def _slowed(system: SystemSpec, kind: MemoryTierKind, link_Bps: float) -> SystemSpec:
    """``system`` with its tier's link at ``link_Bps`` per direction."""
    tier = system.memory_tiers[kind]
    link = tier.link.model_copy(update={"bandwidth_Bps": link_Bps})
    return system.model_copy(update={"memory_tiers": {kind: tier.model_copy(update={"link": link})}})


def _run(case: dict, link_Bps: float | None = None):
    from fabricsim.workload.training import TrainingOptions

    layout = ParallelLayout(
        tensor_parallel=case["tp"],
        pipeline_parallel=case["pp"],
        data_parallel=case["dp"],
        micro_batch_size=case["mb"],
        zero_stage=case["zero"],
        recompute=case["recompute"],
        sequence_parallel=case["tp"] > 1,
    )
    kind = SYSTEMS[case["system"]]
    system = load_system(case["system"])
    if link_Bps is not None:
        system = _slowed(system, kind, link_Bps)
    options = TrainingOptions(overlap_grad_reduce=case["overlap"])
    ctx = training_context(MODELS[case["model"]], system, options)
    batch = case["per_dp"] * case["dp"] * case["mb"]
    offload = OffloadSpec(case["classes"], kind)
    return ctx.estimate(layout, batch, 2048), ctx.estimate(layout, batch, 2048, offload)


@settings(max_examples=60, deadline=None)
@given(cases)
def test_offload_never_faster_and_never_more_hbm(case: dict) -> None:
    base, offloaded = _run(case)
    # the shipped tiers' CPUs stream slower than the GPUs' HBM: offload only adds time
    assert offloaded.step_time_s >= base.step_time_s * (1 - 1e-12)
    assert math.isclose(sum(offloaded.time.as_dict().values()), offloaded.step_time_s, rel_tol=1e-9)
    assert all(value >= 0 for value in offloaded.time.as_dict().values())
    for kind in ("weights", "gradients", "optimizer_states", "activations", "framework"):
        assert getattr(offloaded.memory, kind) <= getattr(base.memory, kind) * (1 + 1e-12)
    assert offloaded.memory.total <= base.memory.total


@settings(max_examples=40, deadline=None)
@given(cases)
def test_infinitely_slow_links_make_offload_no_faster(case: dict) -> None:
    for link_Bps in (1.0, 1e-30):  # a byte per second, and effectively no link at all
        base, offloaded = _run(case, link_Bps)
        assert offloaded.step_time_s >= base.step_time_s
        assert offloaded.time.offload_s > 1e6  # every class moves some bytes over the link


@settings(max_examples=40, deadline=None)
@given(cases, st.sampled_from(CLASS_SETS))
def test_adding_classes_never_adds_hbm_or_removes_tier_bytes(case: dict, more: tuple) -> None:
    _, fewer = _run(case)
    bigger = sorted(set(case["classes"]) | set(more), key=OFFLOAD_ORDER.index)
    _, larger = _run({**case, "classes": tuple(bigger)})
    assert larger.memory.total <= fewer.memory.total * (1 + 1e-12)
    assert larger.tier.bytes.total >= fewer.tier.bytes.total * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(cases)
def test_a_fitting_result_exceeds_no_tier(case: dict) -> None:
    _, offloaded = _run(case)
    if offloaded.fits:
        assert offloaded.memory.total <= offloaded.memory_capacity_bytes
        assert offloaded.tier.bytes.total <= offloaded.tier.capacity_bytes
    else:
        assert offloaded.overflow_tiers
