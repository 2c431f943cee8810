"""``plan train`` and ``plan infer`` on every system of issue 25 -- the catalog's non-NVIDIA systems
and its Blackwell Ultra ones, found in the catalog rather than listed, so a system added later is
covered: a small model gets a ranked plan; a model too large for the GPUs gets a "does not fit"
result (no feasible plan, the smallest need reported), never an error."""

from __future__ import annotations

import pytest

from fabricsim import api, catalog
from fabricsim.specs import Generation

NVIDIA = (Generation.VOLTA, Generation.AMPERE, Generation.HOPPER, Generation.BLACKWELL)
BLACKWELL_ULTRA = ("b300", "gb300")


def _new_systems() -> list[str]:
    systems = [catalog.load_system(name) for name in catalog.names("systems")]
    return sorted(s.name for s in systems if s.device.generation not in NVIDIA or s.device.name in BLACKWELL_ULTRA)


NEW_SYSTEMS = _new_systems()


def test_the_selection_holds_every_issue_25_system() -> None:
    expected = {"mi300x-8", "mi325x-8", "mi355x-8", "gaudi3-8", "tpu-v5p", "tpu-v6e", "tpu7x", "trn2",
                "trn2-ultraserver", "hgx-b300", "gb300-nvl72"}  # fmt: skip
    assert expected <= set(NEW_SYSTEMS)
    assert "dgx-h100" not in NEW_SYSTEMS


def _gpus(system: str) -> int:
    """One scale-up domain, at most 16 GPUs (a whole node: TPU and Trn2 hosts hold 4 and 16 chips)."""
    spec = catalog.load_system(system)
    return max(spec.gpus_per_node, min(16, spec.scale_up.domain_gpus))


@pytest.mark.parametrize("system", NEW_SYSTEMS)
def test_plan_train_ranks_plans_for_a_small_model(system: str) -> None:
    plan = api.plan_train("llama3-8b", system, _gpus(system), 32, 1024, top=2)
    assert plan.feasible > 0 and plan.plans
    best = plan.plans[0].result
    assert best.fits and best.step_time_s > 0 and 0 < best.mfu < 1


@pytest.mark.parametrize("system", NEW_SYSTEMS)
def test_plan_infer_ranks_plans_for_a_small_model(system: str) -> None:
    plan = api.plan_infer("llama3-8b", system, _gpus(system), 256, 32, top=2)
    assert plan.feasible > 0 and plan.plans
    best = plan.plans[0].result
    assert best.fits and best.tpot_s > 0 and best.output_tokens_per_s > 0


@pytest.mark.parametrize("system", NEW_SYSTEMS)
def test_a_model_too_large_is_a_does_not_fit_result(system: str) -> None:
    """Megatron 1T on one GPU: its weights alone exceed any device here in any format the planner
    tries (1e12 x 0.5 B in FP4 = 500 GB > 288 GB, the largest HBM of these systems)."""
    train = api.plan_train("megatron-1t", system, 1, 1, 1024, top=1)
    assert train.feasible == 0 and train.plans == () and train.evaluated > 0
    assert train.smallest_memory_per_gpu_bytes > catalog.load_system(system).device.hbm_capacity_bytes
    infer = api.plan_infer("megatron-1t", system, 1, 256, 32, top=1)
    assert infer.feasible == 0 and infer.plans == () and infer.evaluated > 0
