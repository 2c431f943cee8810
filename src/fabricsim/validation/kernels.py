"""Kernel-level validation: the compute model against public GEMM and attention microbenchmarks it
was not calibrated on (layer L8).

Rows: ``data/kernels-public.yaml`` (DeepGEMM block-scaled FP8 on H800, the XLA matmul table on B200
and H100, vLLM CUTLASS benchmarks on B200, FlashAttention-2 on A100), each with its source. The
calibration points (the catalog's per-device figures, the XLA K=256 point behind
``TILE_OVERHEAD_S``, FA3 A6-A8 behind the attention shape constants) are not in the file, so every
row is out-of-sample. Prediction: ``2mnk·batch / time`` of :mod:`fabricsim.transformer.kernels`
(including its fixed per-kernel time, calibrated on the XLA table's smallest GEMMs, G32/G34, not
in the file); attention ``3.5 x forward FLOPs /
(forward + backward time)``.
"""

from __future__ import annotations

from typing import Any

from fabricsim.specs import DeviceSpec
from fabricsim.transformer.kernels import attention_rates, gemm_rates
from fabricsim.validation.base import (
    HoldoutError,
    SpecSource,
    SuiteResult,
    ValidationEntry,
    device_without_format,
    load_entries,
    mean_abs_error,
)

DATA_FILE = "kernels-public.yaml"
# A catalog system per device of the file (suites get specs through the API's SpecSource, which
# loads systems and models; the device is the system's).
DEVICE_SYSTEMS = {"a100-80gb": "dgx-a100", "h100-sxm": "dgx-h100", "h800": "h800", "b200": "dgx-b200"}
CALIBRATION = (
    "out-of-sample: the calibration points (catalog kernel figures G9/G18/G20/G22-G25/G39-16384, XLA "
    "H100 K=256 G33 and 256^3 G32/G34, DeepGEMM G2/G4, FA3 A6-A8, FA2 A2 16k) are not among these rows"
)


def row_device(row: dict[str, Any], source: SpecSource) -> DeviceSpec:
    return source.load_system(DEVICE_SYSTEMS[str(row["device"])]).device


def predict(row: dict[str, Any], device: DeviceSpec) -> float:
    """Predicted TFLOP/s of one row on ``device``."""
    if row["kind"] == "attention":
        seq, head_dim, causal = float(row["seq"]), float(row["head_dim"]), bool(row["causal"])
        rates = attention_rates(device)
        flops = 4.0 * seq * seq * head_dim * (0.5 if causal else 1.0)  # per head and sequence
        forward = flops / (rates.peak * rates.efficiency(seq, head_dim, causal))
        backward = 2.5 * flops / (rates.peak * rates.efficiency(seq, head_dim, causal, backward=True))
        return 3.5 * flops / (forward + backward) / 1e12
    m, n, k = (float(row[key]) for key in ("m", "n", "k"))
    batch = float(row.get("batch", 1))
    time_s = gemm_rates(device, str(row["format"])).time_s(m, n, k, batch)  # incl. KERNEL_FIXED_S
    return 2.0 * m * n * k * batch / time_s / 1e12


def _entry(row: dict[str, Any], device: DeviceSpec) -> ValidationEntry:
    if row["kind"] == "attention":
        detail = f"{row['device']} attention s={row['seq']} d={row['head_dim']} causal={row['causal']}"
    else:
        detail = f"{row['device']} {row['format']} {row.get('batch', 1)}x{row['m']}x{row['n']}x{row['k']}"
    return ValidationEntry(
        row["id"], "achieved", "TFLOP/s", float(row["value"]), predict(row, device), row["source"], detail
    )


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """Every row; ``holdout``: each device's rows again without its kernel figures (generation
    defaults: leave-one-device-out) and the low-precision GEMM rows with only their device's BF16
    figure (leave-one-dtype-out)."""
    rows = load_entries(DATA_FILE)
    entries = tuple(_entry(row, row_device(row, source)) for row in rows)
    held: list[HoldoutError] = []
    if holdout:
        by_device: dict[str, list[tuple[float, float]]] = {}
        by_format: dict[str, list[tuple[float, float]]] = {}
        for row in rows:
            device = row_device(row, source)
            bare = device.model_copy(update={"kernels": None})
            by_device.setdefault(device.name, []).append((float(row["value"]), predict(row, bare)))
            if row["kind"] == "gemm" and row["format"] not in ("bf16", "fp16"):
                alone = device_without_format(device, str(row["format"]))
                by_format.setdefault(str(row["format"]), []).append((float(row["value"]), predict(row, alone)))
        for kind, groups in (("leave-one-device-out", by_device), ("leave-one-dtype-out", by_format)):
            held += [HoldoutError(kind, g, mean_abs_error(p), len(p)) for g, p in sorted(groups.items())]
    return SuiteResult("kernels", entries, calibration=CALIBRATION, holdout=tuple(held))
