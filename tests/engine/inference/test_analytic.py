"""Analytic static-batch inference: batch max, fits, latency identities."""

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.inference.analytic import InferScenario, infer_estimate, largest_batch
from fabricsim.engine.inference.step import InferenceLayout

H100 = load_system("dgx-h100")
FP8_TP2 = InferenceLayout(tensor_parallel=2, weight_dtype="fp8", kv_dtype="fp8")


def scenario(batch=None, model="llama3.3-70b", layout=FP8_TP2, inp=1024, out=256):
    return InferScenario(load_model(model), H100, layout, inp, out, batch)


def test_batch_max_fits_and_one_more_order_of_magnitude_does_not():
    best = infer_estimate(scenario())
    assert best.fits and best.batch == largest_batch(scenario())
    assert best.memory_per_gpu_bytes <= best.memory_capacity_bytes
    assert not infer_estimate(scenario(batch=best.batch * 4)).fits


def test_latency_identity_and_throughput():
    est = infer_estimate(scenario(batch=32))
    assert est.e2e_latency_s == pytest.approx(est.ttft_s + 255 * est.tpot_s)
    assert est.output_tokens_per_s == pytest.approx(32 * 256 / est.e2e_latency_s)


def test_bigger_batch_more_throughput_slower_tokens():
    small, big = infer_estimate(scenario(batch=8)), infer_estimate(scenario(batch=256))
    assert big.output_tokens_per_s > 4 * small.output_tokens_per_s
    assert big.tpot_s > small.tpot_s and big.ttft_s > small.ttft_s


def test_model_that_does_not_fit_is_a_result():
    est = infer_estimate(scenario(model="llama3-405b", layout=InferenceLayout(tensor_parallel=1)))
    assert not est.fits and est.batch == 1 and est.memory_per_gpu_bytes > est.memory_capacity_bytes


def test_replicas_multiply_throughput():
    one = infer_estimate(scenario(batch=16))
    two = infer_estimate(scenario(batch=16, layout=InferenceLayout(2, 1, 1, "fp8", "fp8", replicas=2)))
    assert two.output_tokens_per_s == pytest.approx(2 * one.output_tokens_per_s)


def test_kv_spill_tier_holds_what_hbm_cannot_at_link_speed():
    from fabricsim.engine.inference.analytic import KvSpill

    base = scenario(batch=400, inp=4096, out=1024)
    assert not infer_estimate(base).fits
    pcie = KvSpill("pcie-gen5", 64e9, 1e-6)
    spilled = infer_estimate(InferScenario(base.model, H100, FP8_TP2, 4096, 1024, 400, spill=pcie))
    assert spilled.fits and spilled.kv_spilled_bytes > 0
    assert spilled.tpot_s > 3 * infer_estimate(scenario(batch=100, inp=4096, out=1024)).tpot_s
    bigger = InferScenario(base.model, H100, FP8_TP2, 4096, 1024, None, spill=pcie)
    assert infer_estimate(bigger).batch > infer_estimate(scenario(inp=4096, out=1024)).batch


def test_default_kv_spill_capacity_is_a_dgx_h100_gpus_share_of_host_memory():
    # a spill tier whose size is not given holds what a DGX H100 gives each GPU: its "2 TB" of
    # system memory is 32 x 64 GB DDR5 DIMMs (2,048 GB; the catalog rounds it to the datasheet's
    # 2.0e12 B) over 8 GPUs
    from fabricsim.catalog import load_system
    from fabricsim.engine.inference.analytic import KvSpill
    from fabricsim.specs.memory_tier import MemoryTierKind

    default = KvSpill("pcie-gen5", 64e9, 1e-6).capacity_bytes
    assert default == pytest.approx(32 * 64e9 / 8)
    host = load_system("dgx-h100").memory_tier(MemoryTierKind.HOST)
    assert default == pytest.approx(host.capacity_per_gpu_bytes, rel=0.025)
