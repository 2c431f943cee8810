"""Kernel-level compute model: GEMM, fused attention and memory-bound kernels by shape, dtype and
device (layer L4).

Every rate here is calibrated on *kernel microbenchmarks* stored with the device in the catalog
(:class:`fabricsim.specs.KernelSpec`, sources per number; the figures are collected in
``transformer/data/kernel-efficiency.md``), never on an end-to-end run.

**GEMM** ``(m x k)·(k x n)``, ``count`` independent problems of that shape (batched / grouped)::

    t = max(2mnk·count / (peak x F x Q(m, n) x K(k)),  bytes / HBM_achieved) + T_kernel

* ``Q`` -- tile and wave quantisation: the output is cut into tiles (CUTLASS/cuBLAS tensor-core
  tiles of 128x256, 256x128 or 128x128); tiles run in waves of one tile per SM, so a GEMM with
  ``T`` tiles on ``S`` SMs takes ``ceil(T/S)`` waves and pays for ``ceil(m/tm)·ceil(n/tn)`` padded
  tiles. ``Q = useful area / (waves x S x tile area)``, best over the tile shapes (as the library's
  heuristic picks), with a smaller tile charged :data:`SMALL_TILE_EFFICIENCY` for its lower
  operand reuse.
* ``K`` -- per-tile fixed cost (pipeline fill, epilogue): :data:`TILE_OVERHEAD_S` of an SM's
  time per tile, i.e. ``k0 = TILE_OVERHEAD_S x per-SM peak / (2·tm·tn)`` extra K elements, so
  ``K(k) = k / (k + k0)``. ``k0`` grows with per-SM throughput, which is why Blackwell and FP8
  need larger K than Hopper BF16 for the same fraction.
* ``F`` -- the achievable large-GEMM fraction of the datasheet peak of the device and GEMM format:
  its published benchmark ``achieved / peak`` at (m_b, n_b, k_b). The benchmark shapes are the best
  of brute-force sweeps (cuBLAS via PyTorch), where the library's tile choice leaves no partial
  wave, so ``Q(m_b, n_b)`` is taken as 1; a GEMM with ``k < k_b`` runs at ``K(k) / K(k_b)`` of it,
  one with ``k >= k_b`` at ``F`` (persistent cuBLAS kernels hide most per-tile cost at large K,
  so the benchmark is not extrapolated upwards).
* the memory roofline covers skinny shapes (decode, small M): operands and output through the
  device's achieved (streaming-kernel) HBM bandwidth.
* ``T_kernel`` (:data:`KERNEL_FIXED_S`): the fixed time of one GEMM kernel on the GPU (launch to
  first tile, pipeline ramp, tail).

**Fused attention** (FlashAttention convention, forward ``4·b·h·s_q·s_k·d`` FLOPs halved when
causal, backward 2.5x): efficiency ``F_attn x s/(s + S0) x d/(d + D0)``, with ``S0`` four times
larger under a causal mask (diagonal blocks half empty, unequal work per query block). ``F_attn``
(forward and backward separately) is inverted from the device's attention benchmark.

**Memory-bound kernels**: bytes / achieved HBM bandwidth (a streaming benchmark of the device).

**Sustained vs burst** (``sustained=True``, what training and serving get): the GEMM and most
attention benchmarks time short bursts -- the MAMF finder behind the cuBLAS figures runs each shape
for 150 iterations (~20-85 ms) with a 256 MiB cache flush between them, so the GPU computes only
~60-70 % of the time (kernel-efficiency.md S1) and the clock has no time to settle at the power
limit (NVIDIA's CUTLASS methodology guide: GPC clocks oscillate for ~3 s of back-to-back GEMMs
before settling, S2). A training step or a serving run keeps the tensor cores busy for hours at
the power limit, where the SM clock settles lower: compute-bound rates are scaled by
``sustained_clock_hz / tensor_clock_hz`` (:func:`sustained_fraction`). HBM-bound work is not
(memory runs on its own clock). An attention figure timed inside a training step (``in_step``) is
already sustained; for a burst prediction (the ``kernels`` validation suite) it is scaled up.

The constants below are fitted on kernel-level sweeps only (sources inline).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from fabricsim.specs import DeviceSpec, Generation
from fabricsim.specs.device import AttentionBenchmark, GemmBenchmark, KernelSpec

TILE_SHAPES = ((128, 256), (256, 128), (128, 192), (192, 128), (128, 128))
"""Output tile shapes (m x n) the GEMM library chooses among: CUTLASS 3.x tensor-core tiles
(128x256 / 256x128 defaults, 128x192 / 192x128 and the 128x128 fallback)."""

TILE_EFFICIENCY = (1.0, 1.0, 0.97, 0.97, 0.92)
"""Relative throughput of each tile shape against 128x256 (less operand reuse per loaded byte for a
smaller tile). Assumed (not fitted); it only matters where a smaller tile avoids a partial wave."""

TILE_OVERHEAD_S = 1.2e-6
"""Fixed cost per output tile on its SM (pipeline fill + epilogue), seconds. Fitted on the XLA
kernel-timing K sweep of H100 BF16 (kernel-efficiency.md G33: (4096, 4096, K=256) at 399 vs
K=4096 at 780 TFLOP/s) after removing the table's ~5 µs per-GEMM floor (G32/G34 note): rates 520
vs 803 -> k0 ~ 135 for a 128x256 tile. The same constant reproduces the B200 BF16 and FP8 K sweeps
(G30, same floor removed: k0 ~ 270 and ~ 500; per-SM rate 2x and 4x Hopper BF16), which were not
used to fit it."""

KERNEL_FIXED_S = 5.0e-6
"""Fixed GPU time of one GEMM kernel, seconds: the smallest GEMMs of the XLA timing table (256^3,
~7 TFLOP/s on both H100 and B200) sit on a ~5 µs floor (kernel-efficiency.md G32/G34 note); the
memory-bound DeepGEMM rows at M=64/128 (G2, G4) take ~6 µs more than their bytes at achieved
bandwidth. It replaces the launch overhead the layer model charged per GEMM."""

ATTENTION_KERNEL_FIXED_S = 13.0e-6
"""Fixed GPU time of one fused decode-attention kernel, seconds, on top of its KV bytes at achieved
HBM bandwidth: FlashInfer's batch decode on H100 reaches only ~41 % of HBM bandwidth at 64
sequences x 32 tokens and ~21 % at 1 x 1k, but ~88 % at 64 x 1k (kernel-efficiency.md A26, MHA 32
heads, d=128, fp16): at 3.0 TB/s achieved the two short cases take 13 and 18 µs more than their
bytes; an alpha-beta fit of all four points gives ~16 µs at 3.1 TB/s. 13 µs (the lower) keeps the
single-request points (A24: 47 / 74 / 88 % at 4k / 16k / 64k) within 10 points. Calibrated low on
H100 kernel data, used for every device (A100's A26 points imply more)."""

ATTENTION_SEQ_HALF = 220.0
"""Sequence length at which a fused non-causal attention kernel runs at half its long-sequence
efficiency: the least-squares fit of ``F x s/(s + S0)`` to FA3 H100 forward, d=128
(kernel-efficiency.md A7: 47 / 63 / 66 % at 512 / 2k / 16k; S0 = 219, F = 0.68)."""

ATTENTION_CAUSAL_SEQ_HALF = 560.0
"""As :data:`ATTENTION_SEQ_HALF` under a causal mask (A7 causal: 30 / 53 / 62 % at 512 / 2k / 16k;
least squares S0 = 559, F = 0.65)."""

ATTENTION_HEAD_DIM_HALF = 60.0
"""Head dimension at which the fused kernel runs at half efficiency: FA3 H100 16k forward
d=64 / 128 / 256 at 50 / 66 / 76 % (A6-A8)."""

MIN_SPLIT_K = 512
"""Smallest K slice a split-K kernel uses (elements): CUTLASS split-K keeps each slice several
k-blocks deep so the partial-sum reduction stays small. Assumed."""

MAX_GEMM_FRACTION = 0.95
"""No GEMM sustains more of the datasheet peak than this (CUTLASS 3.8 Blackwell 'at power' best
cases are 88-98 %, G37): a guard for user-supplied benchmark figures."""
DEFAULT_GEMM_K = 8192.0

# Generation defaults for a device YAML without ``kernels`` (a user's own device, or a device held
# out by ``validate``) or for a figure its ``kernels`` block lacks: the medians of the catalog's
# NVIDIA kernel figures (the AMD, Intel and B300 figures added for issue 25 are not folded in, so the
# defaults stay the ones the NVIDIA suites were validated with) as bursts (BF16 GEMM fraction
# 0.803 at median K 8,576; inverted attention fraction 0.811 forward and backward, in-step figures
# divided by their device's sustained fraction; achieved HBM 0.888 of the datasheet), rounded;
# tests/transformer/test_kernel_defaults.py keeps them within 5%. Fractions of the datasheet peak /
# HBM bandwidth.
DEFAULT_SM_COUNT = {
    Generation.VOLTA: 80,
    Generation.AMPERE: 108,
    Generation.HOPPER: 132,
    Generation.BLACKWELL: 148,
    Generation.CDNA3: 304,  # compute units, AMD Instinct MI300X / MI325X data sheets
    Generation.CDNA4: 256,  # compute units, AMD Instinct MI355X product page (8 XCDs x 32 CUs)
    Generation.GAUDI3: 8,  # matrix engines (MME), Intel Gaudi 3, Hot Chips 2024 (Kaplan): GEMMs run on the 8 MMEs
    Generation.TPU_V5: 8,  # MXUs: 2 TensorCores x 4 MXUs per TPU v5p chip (Cloud TPU docs, "TPU v5p")
    Generation.TPU_V6: 2,  # MXUs: 1 TensorCore x 2 256x256 MXUs per TPU v6e chip (Cloud TPU docs, "TPU v6e")
    Generation.TPU_V7: 2,  # TensorCores per TPU7x chip (Cloud TPU docs, "TPU7x"); its MXU count is not published
    Generation.TRAINIUM2: 8,  # NeuronCore-v3 per Trainium2 chip (AWS Neuron docs, "Trainium2 Architecture")
}
DEFAULT_GEMM_FRACTION = 0.80
DEFAULT_ATTENTION_FRACTION = (0.81, 0.81)
DEFAULT_HBM_FRACTION = 0.85
DEFAULT_SUSTAINED_FRACTION = 0.874
"""Sustained over datasheet clock for a device without a measured ``sustained_clock_hz``: the
median of the catalog's figures (A100 0.926; H100, H200, H800 0.874; B200 0.849). GB200 has no
published sustained-clock measurement (kernel-efficiency.md S8), so it runs on this default (an
assumption; its catalog entry says so)."""

# GEMM format by training dtype and FP8/FP4 recipe. A format missing from a device's benchmarks
# falls back along FORMAT_FALLBACK (e.g. no MXFP8 figure -> the per-tensor FP8 one).
FORMAT_FALLBACK = {"fp16": "bf16", "fp8": "bf16", "fp8_block": "fp8", "mxfp8": "fp8", "nvfp4": "mxfp8", "tf32": "bf16"}
RECIPE_FORMAT = {"delayed": "fp8", "current": "fp8", "block": "fp8_block", "mxfp8": "mxfp8", "nvfp4": "nvfp4"}


def gemm_format(dtype: str, recipe: str | None = None) -> str:
    """GEMM format of a training ``dtype`` under an FP8/FP4 ``recipe`` (None: per-tensor FP8, NVFP4)."""
    if dtype == "fp8":
        return RECIPE_FORMAT.get(recipe or "delayed", "fp8")
    if dtype == "fp4":
        return "nvfp4"
    return dtype


@dataclass(frozen=True, slots=True)
class GemmRates:
    """What one device does with GEMMs of one format: datasheet ``peak`` FLOP/s, asymptotic
    fraction ``fraction``, ``sm_count``, per-tile overhead in K elements for each tile shape,
    achieved HBM B/s, and operand / output bytes per element."""

    peak: float
    fraction: float
    sm_count: int
    k0: tuple[float, ...]
    k_ref: float
    hbm_Bps: float
    operand_bytes: float
    output_bytes: float = 2.0

    def efficiency(self, m: float, n: float, k: float, count: float = 1.0) -> float:
        """Fraction of ``peak`` sustained by ``count`` GEMMs of (m, n, k) (compute side only)."""
        return self.fraction * shape_factor(m, n, min(k, self.k_ref), count, self.sm_count, self.k0)

    def time_s(self, m: float, n: float, k: float, count: float = 1.0) -> float:
        """Seconds of one kernel running ``count`` GEMMs of shape (m, n, k): compute / memory
        roofline plus :data:`KERNEL_FIXED_S`."""
        if m <= 0 or n <= 0 or k <= 0 or count <= 0:
            return 0.0
        compute = 2.0 * m * n * k * count / (self.peak * self.efficiency(m, n, k, count))
        moved = ((m * k + k * n) * self.operand_bytes + m * n * self.output_bytes) * count
        return max(compute, moved / self.hbm_Bps) + KERNEL_FIXED_S


def tile_k0(peak: float, sm_count: int) -> tuple[float, ...]:
    """Per-tile overhead of each :data:`TILE_SHAPES` entry in K elements: ``TILE_OVERHEAD_S x
    per-SM peak / (2·tm·tn)``."""
    per_sm = peak / sm_count
    return tuple(TILE_OVERHEAD_S * per_sm / (2.0 * tm * tn) for tm, tn in TILE_SHAPES)


@lru_cache(maxsize=65536)  # serving asks for the same few shapes step after step
def shape_factor(m: float, n: float, k: float, count: float, sm_count: int, k0: tuple[float, ...]) -> float:
    """``Q(m, n) x K(k)`` of the module docstring, best over the tile shapes. A grid of fewer tiles
    than SMs is split along K (split-K / stream-K, as cuBLAS and CUTLASS do for skinny problems,
    e.g. DeepGEMM's split-K decode kernels, kernel-efficiency.md G15) into at most
    ``SMs // tiles`` slices of at least :data:`MIN_SPLIT_K` elements each."""
    best = 0.0
    for (tm, tn), k_extra, tile_eff in zip(TILE_SHAPES, k0, TILE_EFFICIENCY, strict=True):
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * count
        split = max(1, min(sm_count // tiles, int(k // MIN_SPLIT_K))) if tiles < sm_count else 1
        waves = math.ceil(tiles * split / sm_count)
        padding = m * n * count / (tiles * tm * tn)
        occupancy = tiles * split / (waves * sm_count)
        k_slice = k / split
        factor = tile_eff * padding * occupancy * k_slice / (k_slice + k_extra)
        best = max(best, factor)
    return best


def _kernels(device: DeviceSpec) -> KernelSpec | None:
    return device.kernels


def gemm_benchmark(device: DeviceSpec, fmt: str) -> tuple[str, GemmBenchmark | None]:
    """(format actually found, its benchmark) following :data:`FORMAT_FALLBACK`; (fmt, None) when
    the device has no kernel data at all."""
    kernels = _kernels(device)
    if kernels is None:
        return fmt, None
    found = fmt
    while found not in kernels.gemm and found in FORMAT_FALLBACK:
        found = FORMAT_FALLBACK[found]
    return found, kernels.gemm.get(found, kernels.gemm.get("bf16"))


def format_peak(device: DeviceSpec, fmt: str) -> float:
    """Datasheet dense peak FLOP/s of a GEMM format (block-scaled FP8 runs at the FP8 rate)."""
    dtype = {"fp8_block": "fp8", "mxfp8": "fp8", "nvfp4": "fp4"}.get(fmt, fmt)
    return device.peak(dtype)


FORMAT_BYTES = {"bf16": 2.0, "fp16": 2.0, "tf32": 4.0, "fp8": 1.0, "fp8_block": 1.0, "mxfp8": 1.0, "nvfp4": 0.5}


def sustained_fraction(device: DeviceSpec) -> float:
    """Sustained SM clock at the power limit over the datasheet clock (at most 1): the device's
    measured ``sustained_clock_hz``, else :data:`DEFAULT_SUSTAINED_FRACTION`."""
    kernels = device.kernels
    if kernels is None or kernels.sustained_clock_hz is None:
        return DEFAULT_SUSTAINED_FRACTION
    return min(1.0, kernels.sustained_clock_hz / kernels.tensor_clock_hz)


def gemm_rates(device: DeviceSpec, fmt: str, sustained: bool = False) -> GemmRates:
    """The :class:`GemmRates` of ``device`` for GEMM format ``fmt``, with ``F`` inverted from its
    benchmark (falling back along :data:`FORMAT_FALLBACK`; generation defaults without kernel data);
    ``sustained``: at the sustained clock (module docstring), else as the burst benchmark ran.

    The fraction of a fallback format is the fraction measured for the format it falls back to
    (e.g. no FP8 figure: FP8 GEMMs reach the fraction of their peak that BF16 GEMMs reach)."""
    peak = format_peak(device, fmt)
    sm_count = device.kernels.sm_count if device.kernels else DEFAULT_SM_COUNT[device.generation]
    k0 = tile_k0(peak, sm_count)
    found, bench = gemm_benchmark(device, fmt)
    if bench is None:
        fraction, k_ref = DEFAULT_GEMM_FRACTION, DEFAULT_GEMM_K
    else:
        fraction, k_ref = min(MAX_GEMM_FRACTION, bench.flops_per_s / format_peak(device, found)), float(bench.k)
    # the benchmark's own K factor is divided out so that efficiency(m_b, n_b, k_b) = F
    fraction /= k_ref / (k_ref + k0[0])
    if sustained:
        fraction *= sustained_fraction(device)
    return GemmRates(peak, fraction, sm_count, k0, k_ref, hbm_achieved_Bps(device), FORMAT_BYTES.get(fmt, 2.0))


PROVENANCE_GEMM_FORMATS = ("bf16", "fp8", "fp8_block", "mxfp8", "nvfp4")
"""GEMM formats :func:`kernel_provenance` reports (the training and serving formats)."""


def kernel_provenance(device: DeviceSpec) -> dict[str, object]:
    """Which kernel figures of ``device`` the compute model takes from its catalog ``kernels`` block
    (``measured``: a cited kernel-level figure), which it borrows from another measured figure of
    the device (``borrowed``: GEMM format -> the format whose fraction it uses, along
    :data:`FORMAT_FALLBACK`) and which fall back to the generation defaults of this module
    (``defaults``), for ``fabricsim catalog show``. ``summary`` says the same in one line."""
    kernels = device.kernels
    measured: list[str] = []
    borrowed: dict[str, str] = {}
    defaults: list[str] = []
    if kernels is None:
        defaults = ["sm count", *(f"gemm {fmt}" for fmt in PROVENANCE_GEMM_FORMATS), "attention", "hbm achieved",
                    "sustained clock"]
    else:
        measured = ["sm count", "tensor clock"]
        for fmt in PROVENANCE_GEMM_FORMATS:
            found, bench = gemm_benchmark(device, fmt)
            if fmt in kernels.gemm:
                measured.append(f"gemm {fmt}")
            elif bench is not None:  # the end of the fallback chain, else the bf16 figure
                borrowed[f"gemm {fmt}"] = f"gemm {found if found in kernels.gemm else 'bf16'}"
            else:
                defaults.append(f"gemm {fmt}")
        (measured if kernels.attention is not None else defaults).append("attention")
        (measured if kernels.hbm_achieved_Bps is not None else defaults).append("hbm achieved")
        (measured if kernels.sustained_clock_hz is not None else defaults).append("sustained clock")
    generation = device.generation.value
    parts = [f"measured: {', '.join(measured)}"] if measured else []
    parts += [f"{fmt} as {src}" for fmt, src in borrowed.items()]
    if defaults:
        parts.append(f"defaults (generation {generation}): {', '.join(defaults)}")
    return {"generation": generation, "measured": measured, "borrowed": borrowed, "defaults": defaults,
            "summary": "; ".join(parts)}


def hbm_achieved_Bps(device: DeviceSpec) -> float:
    """Achieved HBM bandwidth of streaming kernels (B/s): the device's benchmark, else a default fraction."""
    if device.kernels is not None and device.kernels.hbm_achieved_Bps is not None:
        return min(device.kernels.hbm_achieved_Bps, device.hbm_bandwidth_Bps)
    return device.hbm_bandwidth_Bps * DEFAULT_HBM_FRACTION


def attention_seq_factor(seq_len: float, causal: bool) -> float:
    half = ATTENTION_CAUSAL_SEQ_HALF if causal else ATTENTION_SEQ_HALF
    return seq_len / (seq_len + half)


def attention_head_factor(head_dim: float) -> float:
    return head_dim / (head_dim + ATTENTION_HEAD_DIM_HALF)


@dataclass(frozen=True, slots=True)
class AttentionRates:
    """Fused attention of one device (16-bit): peak FLOP/s, asymptotic forward and backward
    fractions and the kernel's name."""

    peak: float
    forward_fraction: float
    backward_fraction: float
    kernel: str

    def efficiency(self, seq_len: float, head_dim: float, causal: bool, backward: bool = False) -> float:
        fraction = self.backward_fraction if backward else self.forward_fraction
        return fraction * attention_seq_factor(seq_len, causal) * attention_head_factor(head_dim)


def attention_rates(device: DeviceSpec, sustained: bool = False) -> AttentionRates:
    """Forward/backward asymptotic fractions inverted from the device's attention benchmark, at the
    sustained clock or as a burst (module docstring: an ``in_step`` figure is already sustained)."""
    peak = device.peak("bf16")
    bench: AttentionBenchmark | None = device.kernels.attention if device.kernels else None
    wanted = sustained_fraction(device) if sustained else 1.0  # clock fraction to predict at
    if bench is None:
        forward, backward = DEFAULT_ATTENTION_FRACTION  # burst medians
        return AttentionRates(peak, forward * wanted, backward * wanted, "default")
    timed_at = sustained_fraction(device) if bench.in_step else 1.0  # clock fraction of the figure
    scale = wanted / timed_at
    shape = attention_seq_factor(bench.seq_len, bench.causal) * attention_head_factor(bench.head_dim)
    forward = min(1.0, scale * bench.forward_flops_per_s / (peak * shape))
    backward = min(1.0, scale * bench.backward_flops_per_s / (peak * shape))
    return AttentionRates(peak, forward, backward, bench.kernel)


# Bytes of HBM traffic per element that an FP8/FP4 training recipe's quantisation kernels move,
# (per element of a GEMM's input activation in forward, per element of its output gradient in
# backward), Transformer Engine kernels:
# * delayed (per-tensor, amax history): fused cast + transpose -- read BF16 (2 B), write the FP8
#   tensor and its FP8 transpose (1 + 1 B) -> 4 B; amax reduced in the same pass.
# * current (per-tensor, this step's amax): an amax pass reads the BF16 tensor first -> 2 + 4 B.
# * block (1x128 activations / 128x128 weights, Hopper) and mxfp8 (1x32 blocks, Blackwell): both
#   orientations quantised along K in one pass with 1 scale byte per block -> ~4.1 B.
# * nvfp4 (1x16 blocks, E4M3 scales, random Hadamard transform on the wgrad operands): read 2 B,
#   write two 4-bit copies + scales (1.1 B), RHT read + write of the wgrad copy (2 + 0.5 B) -> 5.6 B.
# Weights are quantised once per step (cached across micro-batches) and are not charged per GEMM.
# The per-tensor figures are Hopper's, whose FP8 GEMMs take the TN layout only; on Blackwell (SM 10.x)
# TE writes no transposed copy (``nvte_is_non_tn_fp8_gemm_supported``, kernel-efficiency.md S13):
# :data:`TRANSPOSE_COPY_BYTES` less.
QUANTIZE_BYTES = {"delayed": 4.0, "current": 6.0, "block": 4.1, "mxfp8": 4.1, "nvfp4": 5.6}
PER_TENSOR_RECIPES = ("delayed", "current")
TRANSPOSE_COPY_BYTES = 1.0


def quantize_bytes_per_element(dtype: str, recipe: str | None, generation: Generation = Generation.HOPPER) -> float:
    """HBM bytes per quantised element of an FP8/FP4 recipe on a GPU of ``generation`` (0 for 16-bit)."""
    if dtype == "fp8":
        recipe = recipe if recipe in QUANTIZE_BYTES else "delayed"
        no_transpose = recipe in PER_TENSOR_RECIPES and generation is Generation.BLACKWELL
        return QUANTIZE_BYTES[recipe] - (TRANSPOSE_COPY_BYTES if no_transpose else 0.0)
    if dtype == "fp4":
        return QUANTIZE_BYTES["nvfp4"]
    return 0.0
