"""Kernel-level validation: the compute model against public GEMM and attention microbenchmarks it
was not calibrated on (layer L8).

Rows: ``data/kernels-public.yaml`` (DeepGEMM block-scaled FP8 on H800, the XLA matmul table on B200
and H100, vLLM CUTLASS benchmarks on B200, FlashAttention-2 on A100), each with its source. The
calibration inputs -- each device's catalog kernel figures and the points the kernel-model
constants were fitted on (the same file's ``calibration`` list: the XLA H100 K sweep ends behind
``TILE_OVERHEAD_S``, the 256^3 GEMMs behind ``KERNEL_FIXED_S``, FA3 A6-A8 behind the attention
shape constants) -- are :func:`calibration_inputs`; no row is one of them, by id or by shape
(tests/validation/test_kernels_suite.py), so every row is out-of-sample. Prediction: ``2mnk·batch
/ time`` of :mod:`fabricsim.transformer.kernels` (including its fixed per-kernel time); attention
``3.5 x forward FLOPs / (forward + backward time)``.
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


def calibration_inputs(source: SpecSource) -> list[dict[str, Any]]:
    """Every kernel-level figure the compute model was calibrated on, with an id: the points the
    kernel-model constants were fitted on (the data file's ``calibration`` list) and the catalog
    kernel figures of the suite's devices (id ``catalog:DEVICE:gemm:FORMAT`` / ``...:attention``)."""
    points = load_entries(DATA_FILE, "calibration")
    for name in sorted(DEVICE_SYSTEMS):
        kernels = source.load_system(DEVICE_SYSTEMS[name]).device.kernels
        if kernels is None:
            continue
        for fmt, bench in sorted(kernels.gemm.items()):
            points.append({"id": f"catalog:{name}:gemm:{fmt}", "kind": "gemm", "device": name, "format": fmt,
                           "m": bench.m, "n": bench.n, "k": bench.k})
        att = kernels.attention
        if att is None:
            continue
        points.append({"id": f"catalog:{name}:attention", "kind": "attention", "device": name, "seq": att.seq_len,
                       "head_dim": att.head_dim, "causal": att.causal})
    return points


def shape_keys(row: dict[str, Any]) -> set[tuple[object, ...]]:
    """What a row or calibration point measures: (kind, device, format, batch, m, n, k) for a GEMM;
    (kind, device, seq, head_dim, causal) for attention, one key per sequence length and mask of a sweep."""
    if row["kind"] == "gemm":
        return {("gemm", row["device"], row["format"], int(row.get("batch", 1)), row["m"], row["n"], row["k"])}
    seqs = row["seq"] if isinstance(row["seq"], list) else [row["seq"]]
    masks = row["causal"] if isinstance(row["causal"], list) else [row["causal"]]
    return {("attention", row["device"], int(s), int(row["head_dim"]), bool(c)) for s in seqs for c in masks}


def calibration_line() -> str:
    fitted = ", ".join(f"{p['id']} ({p['fits']})" for p in load_entries(DATA_FILE, "calibration"))
    return (
        "out-of-sample: no row is a calibration input (disjoint by id and shape); calibrated on each device's "
        f"catalog kernel figures and the constants' fit points {fitted}"
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
        row["id"], "achieved", "TFLOP/s", float(row["value"]), predict(row, device), row["source"], detail,
        command_note=NO_COMMAND,
    )


NO_COMMAND = (
    "no CLI command predicts one kernel: the row is fabricsim.validation.kernels.predict (the burst rate of "
    "fabricsim.transformer.kernels gemm_rates(device, format).time_s(m, n, k, batch) or attention_rates(device))"
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
    return SuiteResult("kernels", entries, calibration=calibration_line(), holdout=tuple(held))
