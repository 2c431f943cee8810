"""Offloaded training steps: Calculon's megatron-1t plan, Grace vs PCIe, costs from the bandwidths."""

import dataclasses
import math
from pathlib import Path

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.training.analytic import estimate_training, training_context
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.specs.memory_tier import OffloadSpec, parse_offload
from fabricsim.workload.training import TrainingOptions

ROOT = Path(__file__).resolve().parents[3]
CALCULON_SYSTEM = str(ROOT / "examples" / "systems" / "dgx-a100-calculon.yaml")
# Calculon's best plan for megatron-1t on 3,072 A100 (issue 11): tp8 pp1 dp384 mb8, SP, selective
# recompute, sharded optimizer; weights, activations and optimizer offloaded to host over PCIe Gen4.
CALCULON_LAYOUT = ParallelLayout(8, 1, 384, 1, 1, 1, 8, 1, Recompute.SELECTIVE, True, "bf16")
EVERYTHING = parse_offload("optimizer,weights,activations", "host")
CALCULON_STEP_S = 47.2  # Calculon's own prediction of this plan (issue 11)


def calculon_plan(system: str, overlap_tp_comm: bool = False):
    # Calculon's plan overlaps data-parallel communication (and, for its 47.2 s, TP communication);
    # where the options split DP overlap into the reduction and the parameter gather, both are on
    dp_overlap = {"overlap_grad_reduce": True}
    if "overlap_param_gather" in {field.name for field in dataclasses.fields(TrainingOptions)}:
        dp_overlap["overlap_param_gather"] = True
    options = TrainingOptions(**dp_overlap, overlap_tp_comm=overlap_tp_comm)
    ctx = training_context(load_model("megatron-1t"), load_system(system), options)
    return ctx, ctx.estimate(CALCULON_LAYOUT, 3072, 2048, EVERYTHING)


def test_calculon_plan_fits_with_calculons_offload_memory_and_hides_its_transfers() -> None:
    _, est = calculon_plan(CALCULON_SYSTEM)
    assert est.fits and est.overflow_tiers == ()
    assert est.memory.total < 20 * 2**30  # Calculon reports 17.8 GiB of HBM for this plan
    assert est.tier is not None and est.tier.bytes.total <= est.tier.capacity_bytes
    assert est.time.offload_s == 0.0  # 32 GB/s per GPU: every pass's transfers fit under its compute
    assert math.isclose(sum(est.time.as_dict().values()), est.step_time_s, rel_tol=1e-12)
    _, overlapped = calculon_plan(CALCULON_SYSTEM, overlap_tp_comm=True)
    assert overlapped.step_time_s < est.step_time_s
    # within 30% of Calculon's own 47.2 s (a different kernel model: a band, not a fit)
    assert 0.7 * CALCULON_STEP_S < overlapped.step_time_s < 1.3 * CALCULON_STEP_S


def test_calculon_plan_overflows_the_real_dgx_a100_host_memory() -> None:
    _, est = calculon_plan("dgx-a100")
    assert not est.fits and est.overflow_tiers == ("host",)  # 2 TB per node: 250 GB per GPU
    assert est.memory.total <= est.memory_capacity_bytes
    assert est.tier is not None and est.tier.bytes.total > 250e9
    # two GPUs per PCIe Gen4 switch uplink: 16 GB/s each, the weights' write-back is exposed
    assert est.time.offload_s > 0.0


def test_offload_keeps_compute_and_moves_the_bytes() -> None:
    ctx, est = calculon_plan(CALCULON_SYSTEM)
    base = ctx.estimate(CALCULON_LAYOUT, 3072, 2048)
    assert not base.fits and base.overflow_tiers == ("hbm",)
    assert est.time.forward_compute_s == base.time.forward_compute_s
    assert est.memory.optimizer_states == 0.0 and est.tier.bytes.optimizer_states == base.memory.optimizer_states
    assert est.tier.bytes.weights == base.memory.weights  # the whole 16-bit store, ZeRO-1 keeps it whole
    assert est.memory.weights < base.memory.weights / 50  # two layers of 128


def test_cpu_adam_costed_from_host_memory_bandwidth() -> None:
    system = load_system("dgx-b200")
    model = load_model("llama3-70b")
    layout = ParallelLayout(8, 1, 8, 1, 1, 1, 1, 1, Recompute.SELECTIVE, True, "bf16")
    est = estimate_training(model, system, layout, 64, 4096, offload=parse_offload("optimizer"))
    tier = system.memory_tier(EVERYTHING.tier)
    owned = est.tier.bytes.optimizer_states / 12.0  # fp32 master + m + v per parameter
    # a fused mixed-precision Adam step per parameter reads the fp32 gradient, master, m and v
    # (4 x 4 B), writes master, m and v (3 x 4 B) and the 16-bit model copy (2 B): 30 B of DRAM traffic
    adam_bytes = 4 * 4 + 3 * 4 + 2
    expected = owned * adam_bytes / (tier.memory_bandwidth_Bps / tier.gpus)
    assert est.time.optimizer_s == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("overlap_grad_reduce", [False, True])
def test_grace_over_c2c_beats_host_over_pcie_gen5(overlap_grad_reduce: bool) -> None:
    """Optimizer offload on gb200-nvl72 (Grace, NVLink-C2C) vs dgx-b200 (host DRAM, PCIe Gen5)."""
    model = load_model("llama3-70b")
    layout = ParallelLayout(8, 1, 8, 1, 1, 1, 1, 1, Recompute.SELECTIVE, True, "bf16")
    options = TrainingOptions(overlap_grad_reduce=overlap_grad_reduce)
    cost = {}
    for name, tier in (("gb200-nvl72", "grace"), ("dgx-b200", "host")):
        system = load_system(name)
        est = estimate_training(model, system, layout, 64, 4096, options, parse_offload("optimizer", tier))
        base = estimate_training(model, system, layout, 64, 4096, options)
        spec = system.memory_tier(est.tier.offload.tier)
        cost[name] = (est.time.offload_s, est.time.optimizer_s, spec, est, est.step_time_s - base.step_time_s)
    grace, pcie = cost["gb200-nvl72"], cost["dgx-b200"]
    assert 0 < grace[4] < pcie[4]  # what the offload adds to the step: exposed transfers + CPU Adam
    # the bandwidths behind it: C2C 450 GB/s per direction over 2 GPUs vs PCIe Gen5 x16 64 GB/s per GPU;
    # LPDDR5X 512 GB/s over 2 GPUs vs DDR5 716.8 GB/s over 8 GPUs
    assert grace[2].link_bandwidth_per_gpu_Bps == 225e9 and pcie[2].link_bandwidth_per_gpu_Bps == 64e9
    assert grace[2].memory_bandwidth_per_gpu_Bps == 256e9 and pcie[2].memory_bandwidth_per_gpu_Bps == 89.6e9
    assert grace[0] + grace[1] < pcie[0] + pcie[1]
    assert grace[1] / pcie[1] == pytest.approx(89.6 / 256, rel=1e-9)
    if not overlap_grad_reduce:  # the gradient shard goes out after backward: exposed on both
        assert 0 < grace[0] < pcie[0]
        gradients, layers = grace[3].tier.bytes.gradients, model.num_hidden_layers  # pp 1: every layer
        assert grace[0] == pytest.approx(gradients / 225e9 + layers * grace[2].link.latency_s, rel=1e-9)
        assert pcie[0] == pytest.approx(gradients / 64e9 + layers * pcie[2].link.latency_s, rel=1e-9)


def test_a_system_without_the_tier_names_it() -> None:
    from fabricsim.errors import FabricsimError

    with pytest.raises(FabricsimError) as error:
        estimate_training(
            load_model("llama3-8b"), load_system("h800"), ParallelLayout(1, 1, 8), 64, 2048,
            offload=OffloadSpec(EVERYTHING.classes),
        )
    assert error.value.field == "offload-tier" and "h800 has no host memory tier" in str(error.value)
