"""Accelerator specification (layer L1). SI units: FLOP/s, bytes, bytes/s per direction, watts."""

from __future__ import annotations

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
    """GPU architecture generation; selects rows of NCCL's tuning tables."""

    VOLTA = "volta"
    AMPERE = "ampere"
    HOPPER = "hopper"
    BLACKWELL = "blackwell"


class DeviceSpec(FrozenSpec):
    """One GPU. ``peak_flops`` holds dense tensor-core peaks per dtype (FLOP/s)."""

    name: str
    generation: Generation
    peak_flops: dict[Dtype, PositiveFloat]
    hbm_capacity_bytes: PositiveFloat
    hbm_bandwidth_Bps: PositiveFloat
    nvlink_bandwidth_Bps: PositiveFloat = Field(description="aggregate NVLink bandwidth per direction")
    nvlink_links: PositiveInt
    pcie_bandwidth_Bps: PositiveFloat = Field(description="host link bandwidth per direction")
    tdp_w: PositiveFloat
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
