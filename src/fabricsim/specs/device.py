"""Accelerator specification (layer L1). SI units: FLOP/s, bytes, bytes/s per direction, watts."""

from enum import Enum

from pydantic import Field, PositiveFloat, PositiveInt

from fabricsim.specs.base import FrozenSpec


class Dtype(str, Enum):
    """Numeric formats whose tensor-core peak a device declares."""

    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP4 = "fp4"


DTYPE_BYTES: dict[Dtype, float] = {
    Dtype.FP32: 4.0,
    Dtype.TF32: 4.0,
    Dtype.BF16: 2.0,
    Dtype.FP16: 2.0,
    Dtype.FP8: 1.0,
    Dtype.FP4: 0.5,
}


class Generation(str, Enum):
    """Accelerator architecture generation; selects rows of NCCL's tuning tables (NVIDIA) and the
    kernel model's defaults. NCCL's tables have no rows for AMD CDNA or Intel Gaudi: the
    collective model then applies no per-generation cap (:mod:`fabricsim.collectives.algorithms`)."""

    VOLTA = "volta"
    AMPERE = "ampere"
    HOPPER = "hopper"
    BLACKWELL = "blackwell"
    CDNA3 = "cdna3"  # AMD Instinct MI300X, MI325X
    CDNA4 = "cdna4"  # AMD Instinct MI350X, MI355X
    GAUDI3 = "gaudi3"  # Intel Gaudi 3
    TPU_V5 = "tpu-v5"  # Google TPU v5p
    TPU_V6 = "tpu-v6"  # Google TPU v6e (Trillium)
    TPU_V7 = "tpu-v7"  # Google TPU7x (Ironwood)
    TRAINIUM2 = "trainium2"  # AWS Trainium2


class GemmBenchmark(FrozenSpec):
    """One published GEMM microbenchmark: ``flops_per_s`` achieved on ``batch`` GEMMs of (m, n, k)."""

    flops_per_s: PositiveFloat
    m: PositiveInt
    n: PositiveInt
    k: PositiveInt
    batch: PositiveInt = 1


class AttentionBenchmark(FrozenSpec):
    """One published fused-attention microbenchmark (FlashAttention convention: forward FLOPs
    4·b·h·s²·d, halved when causal; backward 2.5x forward), 16-bit, at ``seq_len`` and ``head_dim``."""

    kernel: str
    forward_flops_per_s: PositiveFloat
    backward_flops_per_s: PositiveFloat
    seq_len: PositiveInt
    head_dim: PositiveInt
    causal: bool
    in_step: bool = False  # timed inside a running training step (sustained clock), not in isolation


class KernelSpec(FrozenSpec):
    """Kernel-level measurements of a device that the compute model is calibrated on (never an
    end-to-end run). ``gemm`` keys are GEMM formats: bf16, fp16, tf32, fp8 (per-tensor scaled),
    fp8_block (1x128 / 128x128 block scaled), mxfp8, nvfp4. ``hbm_achieved_Bps``: a streaming
    kernel's achieved HBM bandwidth. ``tensor_clock_hz``: the clock of the datasheet peak;
    ``sustained_clock_hz``: the SM clock measured at the power limit under sustained dense tensor
    work. ``attention``, ``hbm_achieved_Bps`` and ``sustained_clock_hz`` may be None where no
    kernel-level figure is published (e.g. a device with public GEMM figures only): the generation
    default applies to that figure alone."""

    sm_count: PositiveInt
    tensor_clock_hz: PositiveFloat
    sustained_clock_hz: PositiveFloat | None = None
    gemm: dict[str, GemmBenchmark]
    attention: AttentionBenchmark | None = None
    hbm_achieved_Bps: PositiveFloat | None = None


class DeviceSpec(FrozenSpec):
    """One GPU. ``peak_flops`` holds dense tensor-core peaks per dtype (FLOP/s); ``kernels`` the
    kernel microbenchmarks the compute model is calibrated on (None: generation defaults)."""

    name: str
    generation: Generation
    peak_flops: dict[Dtype, PositiveFloat]
    hbm_capacity_bytes: PositiveFloat
    hbm_bandwidth_Bps: PositiveFloat
    nvlink_bandwidth_Bps: PositiveFloat = Field(description="aggregate NVLink bandwidth per direction")
    nvlink_links: PositiveInt
    pcie_bandwidth_Bps: PositiveFloat = Field(description="host link bandwidth per direction")
    tdp_w: PositiveFloat | None = Field(default=None, description="None: not published (Google TPUs)")
    kernels: KernelSpec | None = None
    sources: dict[str, str] = Field(default_factory=dict)

    def peak(self, dtype: Dtype | str) -> float:
        """Dense peak FLOP/s for ``dtype``; a dtype the device lacks falls back to its BF16 peak
        (the hardware runs it in the next wider format it has)."""
        key = Dtype(dtype)
        if key in self.peak_flops:
            return self.peak_flops[key]
        if key == Dtype.FP16:
            return self.peak_flops[Dtype.BF16]
        wider = {Dtype.FP4: Dtype.FP8, Dtype.FP8: Dtype.BF16}
        while key in wider and key not in self.peak_flops:
            key = wider[key]
        return self.peak_flops.get(key, self.peak_flops[Dtype.BF16])
