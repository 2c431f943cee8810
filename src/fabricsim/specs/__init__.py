"""Frozen, validated specifications (layer L1): device, fabric, system, model, parallel layout."""

from fabricsim.specs.calibration import CollectiveFit, FitLine
from fabricsim.specs.device import (
    DTYPE_BYTES,
    AttentionBenchmark,
    DeviceSpec,
    Dtype,
    GemmBenchmark,
    Generation,
    KernelSpec,
)
from fabricsim.specs.fabric import (
    LinkKind,
    LinkSpec,
    ScaleOutSpec,
    ScaleUpSpec,
    ScaleUpTopology,
    SwitchSpec,
    TopologyKind,
)
from fabricsim.specs.layout import RECOMPUTE_MODULES, ParallelLayout, Recompute, recompute_modules
from fabricsim.specs.model import ModelSpec
from fabricsim.specs.system import CpuVendor, SystemSpec

__all__ = [
    "DTYPE_BYTES",
    "RECOMPUTE_MODULES",
    "AttentionBenchmark",
    "CollectiveFit",
    "CpuVendor",
    "DeviceSpec",
    "Dtype",
    "FitLine",
    "GemmBenchmark",
    "Generation",
    "KernelSpec",
    "LinkKind",
    "LinkSpec",
    "ModelSpec",
    "ParallelLayout",
    "Recompute",
    "ScaleOutSpec",
    "ScaleUpSpec",
    "ScaleUpTopology",
    "SwitchSpec",
    "SystemSpec",
    "TopologyKind",
    "recompute_modules",
]
