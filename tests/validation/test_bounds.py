"""Every validation row is bounded: per-row maximum |error|, suite mean |error| and signed bias.

A row the model misses stays in the report; if it is outside its suite's row bound it must be
listed in ``EXPECTED_MISSES`` with the reason from its source, and the test then asserts that it
*still* misses (a strict expected failure): a fix of the model, or a regression, both show up here.
Bounds are set a little outside today's figures so that a change of the model that moves a suite
is a deliberate edit of this table. Rows the suite cannot predict are counted (``skipped``).
"""

from dataclasses import dataclass

import pytest

from fabricsim import catalog
from fabricsim.validation import SUITES, run_suite


@dataclass(frozen=True)
class Bound:
    row_max: float
    """Largest |error| of any row not in EXPECTED_MISSES."""
    mean_abs: float
    bias: tuple[float, float]
    """Allowed range of the mean signed error (predicted - measured) / measured."""
    rows: int
    skipped: int = 0


BOUNDS = {
    # nccl-tests: 8xH100 all-reduce (NVLS) 16 MiB-16 GiB within 7%. A100 send/recv (issue 10): NCCL 2.30's
    # channel rule (collectives/p2p.py, enqueue.cc addP2pToPlan) x 14 GB/s per channel (paths.cc
    # P2P_PER_CHANNEL_NET_BW): 128 MiB on 8 channels +0.1%, 256 MiB on 16 +17.6%; 512 MiB and 1 GiB run on
    # 32 channels under NCCL 2.30's rule, so NVLink (240 GB/s) is the limit again: +23.9%, +22.7%
    # (NCCL <= 2.19 clamped an 8-rank send/recv to 16 channels; the run's NCCL version is not published).
    "collectives": Bound(row_max=0.26, mean_abs=0.08, bias=(0.0, 0.08), rows=15),
    # Published fabric effects at flow fidelity (issue 23): xAI Colossus ECMP 0.43 vs 0.60 (-27.6%), adaptive
    # 0.82 vs Spectrum-X's 0.95 (-13.9%); Meta's E-ECMP + QP scaling gain is an expected miss (below).
    "fabric": Bound(row_max=0.30, mean_abs=0.75, bias=(0.40, 0.50), rows=3),
    # Megatron SC'21 Table 1 + Korthikanti 2022 + the Megatron README row. Out-of-sample since issue 10
    # (A100 compute from a 2025 cuBLAS benchmark at the sustained clock, nothing fitted on these rows).
    "training": Bound(row_max=0.15, mean_abs=0.08, bias=(0.0, 0.05), rows=20),
    # Megatron-Core r0.8.0 H100 weak scaling (issue 10), unpublished micro-batch at Megatron's default 1:
    # optimistic on the small models (1.7B +23%, 7.1B +19%), pessimistic on 32B (-19%: fp32 gradients over
    # one NIC per GPU, hidden under one micro-batch's backward only).
    "training-h100": Bound(row_max=0.30, mean_abs=0.11, bias=(0.0, 0.09), rows=9),
    # NVIDIA dgxc-benchmarking / Megatron-Bridge runs on H100, B200, GB200 (issue 10), out-of-sample:
    # optimistic on GB200 (+7..+19%, 405B step times 17-24% short: GB200 runs on the catalog median sustained
    # clock, no GB200 measurement exists; issue 27 reverted the B200 fraction chosen with this suite's
    # residual in view, and the mean went from 9.5% to 10.2%) and on DeepSeek-V3 over 1,024 H100
    # (+24.5% with the recipe's MTP layer in NVIDIA's pipeline layout Et|(tt|)*30mL, expert TP 1, DeepEP,
    # recompute modules mla_up_proj + mlp and the 1F1B A2A overlap paired in the steady state only: the
    # overlap is worth ~1.4x here, the one published before/after, Megatron-Bridge PR #3862 on Qwen3-30B-A3B
    # over 16 H100, 1.32x); the two 405B rows with
    # pp*vpp > layers run with the recipes' pipeline-split accounting of the embedding and the loss.
    # Issue 27 (NVFP4 GEMMs at the cuBLASLt figure, kernel-efficiency.md W1): the GB200 NVFP4 rows join their
    # MXFP8 siblings' optimism (70B +26.5% vs +17.8%, 405B +13.2% vs +13.6%; they were +7.1% / -5.6% on the
    # former 3,904 TFLOP/s figure); mean 10.5% -> 11.5%.
    "training-public": Bound(row_max=0.27, mean_abs=0.12, bias=(0.03, 0.07), rows=26),
    # Public GEMM / attention microbenchmarks not used for calibration (issue 10; issue 27 removed G33-4096,
    # a point TILE_OVERHEAD_S was fitted on, and added G39-nvfp4-m16384, the former B200 NVFP4 figure).
    "kernels": Bound(row_max=0.28, mean_abs=0.10, bias=(-0.04, 0.02), rows=43),
    # TRT-LLM H100 offline throughput: 30 dense Llama rows + 7 Qwen3-235B-A22B MoE rows; 15 Llama 4 rows
    # skipped (interleaved MoE / chunked attention not modelled).
    "inference": Bound(row_max=0.25, mean_abs=0.07, bias=(-0.03, 0.04), rows=37, skipped=15),
    # MLPerf Inference Llama 2 70B / Llama 3.1 405B Server and Offline, NVIDIA (issue 24), out-of-sample, on the
    # datasets' per-request lengths: Hopper -4%..+10%; B200/GB200 (NVFP4, cuBLASLt figure W1 since issue 27;
    # were 18-38% low on the former 3,904 TFLOP/s CUTLASS figure) -12%..+3%; GB300 (kernel block from B300
    # figures W2/W3 since issue 27; was +44% / +77% on the generation defaults) Offline +13%, Server +33%.
    "serving": Bound(row_max=0.35, mean_abs=0.08, bias=(0.0, 0.04), rows=14),
    # serving's rows + AMD MI300X/MI325X (vLLM) Llama 2 70B and Mixtral 8x7B (issue 25) on the AMD GEMM figures of
    # kernel-efficiency.md V1-V7: AMD -9%..+35% (Mixtral Server the highest), NVIDIA as in serving.
    "mlperf-inference": Bound(row_max=0.37, mean_abs=0.11, bias=(0.04, 0.07), rows=24, skipped=4),
    # MLPerf Training v4.1-v5.1 per-step time (issue 25 item 4), out-of-sample, NVIDIA H100/H200/B200/GB200/GB300
    # and AMD MI300X/MI325X/MI355X: optimistic overall (LoRA rows -2..-24%, GB200 405B FP8 -19/-20%; AMD -6..-22%
    # on the AMD kernel figures of kernel-efficiency.md V1-V7). Issue 27 (NVFP4 at the cuBLASLt figure W1, a GB300
    # kernel block W2/W3): GB200 NVFP4 405B +14..+18% -> -2..-4%, GB300 NVFP4 405B -28.6% -> -9.3%, GB300 LoRA
    # NVFP4 -30.0% -> -12.1%; mean 14.3% -> 12.4%. Skipped: Google TPU GPT-3 v4.0/v4.1 (int8, eval inside the
    # logged blocks), Google v5.0 (Stable Diffusion only), MI350X, Intel (Gaudi 2 only, v4.0).
    "mlperf-training": Bound(row_max=0.25, mean_abs=0.13, bias=(-0.12, -0.09), rows=43, skipped=5),
}

EXPECTED_MISSES: dict[str, str] = {
    # MLPerf Training (issue 25): the 512-GPU Llama 3.1 8B rows (gbs 64, one 8k-token micro-batch per 8 GPUs,
    # tp2 cp4): 89 / 85 ms steps predicted at 52 / 52 ms (-41.6%, -39.0%). Diagnosed, not fixed (the yaml's comment
    # above the rows): the missing ~37 ms is no per-step constant, not the data-parallel collectives at the modelled
    # bandwidth (-27% / -23% fully exposed) and not NIC-bound (GB300's 2x NICs gain 4%); NeMo's per-communicator
    # NCCL CTA limits (dp_cp 8, cp 1) are the unmeasured candidate.
    "v5.1-nvidia-8b-gb200-512": "MLPerf v5.1 Llama 3.1 8B on 512 GB200",
    "v5.1-nvidia-8b-gb300-512": "MLPerf v5.1 Llama 3.1 8B on 512 GB300",
    # -39.0% (-28.4% before issue 27's NVFP4 figure): a 1.668 s step predicted at 1.018 s. fabricsim's memory model
    # puts the layout (tp1 cp2 dp4) at 208 GB of 192 GB, so the submission must save memory in a way the row does
    # not model; its GB300 sibling (dp8, cp1, 288 GB) measures 0.953 s and is predicted at -12.1%.
    "v5.1-nvidia-lora-gb200-8-nvfp4": "MLPerf v5.1 Llama 2 70B LoRA NVFP4 on 8 GB200",
    # +34.5%: vLLM's NVFP4 CUTLASS GEMM with its untuned 'Before' configs (3,904 TFLOP/s at 16384x6144x4096, the
    # catalog's figure until issue 27) against the model on cuBLASLt's 6,143 TFLOP/s at 8192^3 (W1): two kernel
    # libraries 1.35x apart at a similar size; the same PR's tuned 'After' table was not retrieved.
    "G39-nvfp4-m16384": "vLLM PR #20646 NVFP4 CUTLASS GEMM 16384x6144x4096 on B200",
    # +15.5%: the A100 suite's optimism (GEMMs calibrated on MAMF's best A100 shape) on the SC'21 row with
    # the most exposed data-parallel time; its all-reduce runs in fp16 as Megatron-LM v2.5 did for --fp16
    # without --accumulate-allreduce-grads-in-fp32 (examples/sc21/CONFIG.sh), half the bytes of the fp32
    # reduction modelled before (+12.5%).
    "megatron-sc21-t1-76b": "SC'21 Table 1 76B on 1,024 A100 (tp8 pp4 dp32)",
    # +176.8%: a synchronized 3,072-GPU ring all-reduce on the max-min flow model waits for its most-collided
    # uplink (3-4 ECMP flows on one 400G port), so spreading gains ~3.9x; Meta measured "up to 40%" (16 hashed
    # QPs per connection would still give ~3.3x here: the gap is not the many-QP limit of the scenario).
    "meta-e-ecmp-qp-scaling-allreduce": "Meta AI Zone: E-ECMP + QP scaling over baseline ECMP, AllReduce busbw",
}

SUITE_NAMES = sorted(SUITES)


def test_every_suite_has_a_bound() -> None:
    assert sorted(BOUNDS) == SUITE_NAMES


@pytest.fixture(scope="module", params=SUITE_NAMES)
def suite(request):
    return run_suite(request.param, catalog)


def test_rows_are_bounded_or_listed_misses(suite) -> None:
    bound = BOUNDS[suite.name]
    assert len(suite.entries) == bound.rows
    assert len(suite.skipped) == bound.skipped
    assert all(reason for _, reason in suite.skipped)
    for entry in suite.entries:
        if entry.id in EXPECTED_MISSES:
            assert abs(entry.error) > bound.row_max, f"{entry.id} no longer misses: move it into the bound"
        else:
            assert abs(entry.error) <= bound.row_max, (entry.id, round(entry.error, 3))
    assert suite.mean_abs_error <= bound.mean_abs
    low, high = bound.bias
    assert low <= suite.bias <= high, suite.bias


def test_expected_misses_exist() -> None:
    ids = {e.id for name in SUITE_NAMES for e in run_suite(name, catalog).entries if name != "inference"}
    assert set(EXPECTED_MISSES) <= ids
