"""Public end-to-end training suite: NVIDIA's published Megatron-Core / NeMo / Megatron-Bridge runs
on H100, B200 and GB200 (dense Llama 3.x and DeepSeek-V3 MoE; BF16, FP8, MXFP8, NVFP4) (layer L8).

Rows (``data/training-nvidia-public.yaml``, each with its source) are used for validation only:
nothing in fabricsim was fitted on them. Every row runs with the same global constants and the
settings the source publishes (layout, micro-batch, virtual stages, FSDP, FP8 recipe, recomputation) plus the
defaults of current Megatron-Core recipes applied to all rows alike: flash attention, overlapped
gradient reduction, tensor-parallel communication overlap, sequence parallelism with tp > 1,
ZeRO-1 distributed optimizer (FSDP rows: ZeRO-3), no activation recomputation (unless the row's
``recompute`` says otherwise), the fused cross
entropy of the row's framework (:data:`CROSS_ENTROPY_BY_FRAMEWORK`), and 16-bit gradients reduced
in bf16 (:data:`GRAD_REDUCE_IN_FP32`); a row whose recipe sets an option otherwise says so in
``settings`` (with its source).

Besides the per-row errors the suite reports held-out errors of the kernel calibration:

* leave one device out: the rows of device D predicted with D's kernel benchmarks removed (the
  compute model falls back to the generation defaults of :mod:`fabricsim.transformer.kernels`);
* leave one dtype out: the rows of training dtype/recipe X predicted without X's GEMM benchmark
  (X's GEMMs reach the fraction of their peak that BF16 GEMMs reach on that device).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from statistics import mean
from typing import Any

from fabricsim.engine.training.analytic import TrainingEstimate, estimate_training
from fabricsim.errors import FabricsimError
from fabricsim.specs import ParallelLayout, Recompute, SystemSpec
from fabricsim.transformer.kernels import gemm_format
from fabricsim.validation.base import (
    HoldoutError,
    SpecSource,
    SuiteResult,
    ValidationEntry,
    load_entries,
    system_without_format,
    system_without_kernels,
)
from fabricsim.validation.commands import train_command
from fabricsim.workload.training import TrainingOptions

DATA_FILE = "training-nvidia-public.yaml"
CALIBRATION = (
    "out-of-sample: no constant fitted on these rows; compute calibrated on each device's kernel "
    "benchmarks in the catalog (cuBLAS/DeepGEMM/CUTLASS GEMMs, FlashAttention/cuDNN attention, "
    "STREAM-class bandwidth; devices/*.yaml 'kernels') and kernel-level sweeps (XLA K sweep, FA3 "
    "seq/head-dim sweep), at each device's sustained clock (Hopper S5, B200 S14; GB200: not measured, the "
    "catalog median fraction 0.874 ASSUMED, S8); compute beside an overlapped collective 18.9% slower (S9)"
)

# Gradient buffer and data-parallel reduction in bf16 for every row: the performance paths turn the
# recipes' fp32 default off. NeMo 2 (dgxc rows): ``recipe.trainer.plugins.grad_reduce_in_fp32 =
# False`` in ``pretrain_performance_optimizations`` (NVIDIA/NeMo @ d2b21556
# nemo/collections/llm/recipes/llama3_8b.py:240, llama3_70b.py:246, llama31_405b.py:253) and again
# for FP8 (dgxc-benchmarking @ 85380ff llama3.1/pretrain_llama31.py:131; NeMo @ 6f2c6fda
# scripts/performance/utils.py:437). NVIDIA-NeMo/Megatron-Bridge (MB rows): the recipes and perf YAMLs
# at r0.1.0 = 684a6861 (src/megatron/bridge/recipes/llama/llama3_8b.py:163-164;
# scripts/performance/configs/llama3/llama3_8b_llm_pretrain.yaml:39; recipes/deepseek/deepseek_v3.py:252),
# ``set_*_common_configs`` at v0.2.0 = 7af9601c / v0.3.0 = 21b02e0c (scripts/performance/configs/
# llama3/llama3_llm_pretrain.py:46-47, configs/llama/llama3_llm_pretrain.py:43-44,
# configs/deepseek/deepseek_llm_pretrain.py:37-41).
GRAD_REDUCE_IN_FP32 = False

# Loss kernels by the framework that published the row. NeMo 2 (the dgxc-benchmarking rows):
# ``GPTConfig.cross_entropy_loss_fusion = True`` with Megatron-Core's default implementation (native).
# Megatron-Bridge performance recipes (the MB rows): ``cross_entropy_loss_fusion: true`` and
# ``cross_entropy_fusion_impl: te`` (scripts/performance dry-run configs, e.g.
# dryrun_configs/deepseek/deepseek_v3_pretrain_h100_fp8_sc_v1.yaml @ a9497c6; the perf helper
# ``_benchmark_common(cross_entropy_impl="te")``).
CROSS_ENTROPY_BY_FRAMEWORK = {"dgxc": "native", "mb": "te"}


def row_framework(row: dict[str, Any]) -> str:
    """``dgxc`` (NeMo 2, dgxc-benchmarking) or ``mb`` (Megatron-Bridge) from the row id."""
    return "dgxc" if str(row["id"]).startswith("dgxc") else "mb"


def row_layout(row: dict[str, Any]) -> ParallelLayout:
    """The published layout of a row (data parallel = GPUs / (tp·pp·cp))."""
    tp, pp, cp = int(row["tp"]), int(row["pp"]), int(row["cp"])
    return ParallelLayout(
        tensor_parallel=tp,
        pipeline_parallel=pp,
        context_parallel=cp,
        data_parallel=int(row["gpus"]) // (tp * pp * cp),
        expert_parallel=int(row.get("ep", 1)),
        expert_tensor_parallel=int(row["etp"]) if "etp" in row else None,
        virtual_stages=int(row.get("vp", 1)),
        micro_batch_size=int(row["mbs"]),
        zero_stage=3 if int(row.get("fsdp", 0)) else 1,
        recompute=Recompute(row.get("recompute", "none")),
        sequence_parallel=tp > 1,
        dtype=str(row["dtype"]),
    )


def row_options(row: dict[str, Any]) -> TrainingOptions:
    """The suite's defaults (module docstring) with what the row's recipe sets otherwise (``settings``,
    e.g. the DeepEP dispatcher; sourced in ``settings_source``)."""
    defaults: dict[str, Any] = {"flash_attention": True, "overlap_grad_reduce": True, "overlap_tp_comm": True}
    defaults["cross_entropy"] = CROSS_ENTROPY_BY_FRAMEWORK[row_framework(row)]
    defaults["grad_reduce_in_fp32"] = GRAD_REDUCE_IN_FP32
    settings = {key: tuple(v) if isinstance(v, list) else v for key, v in row.get("settings", {}).items()}
    return TrainingOptions(**{**defaults, **settings}, fp8_recipe=row.get("recipe"))


def estimate_row(row: dict[str, Any], source: SpecSource, system: SystemSpec | None = None) -> TrainingEstimate:
    """fabricsim's estimate of one row on ``system`` (default: the row's system from ``source``)."""
    system = system or source.load_system(str(row["system"]))
    model = source.load_model(str(row["model"]))
    return estimate_training(model, system, row_layout(row), int(row["gbs"]), int(row["seq"]), row_options(row))


def predicted_value(row: dict[str, Any], estimate: TrainingEstimate) -> float:
    if row["metric"] == "step_time_s":
        return estimate.step_time_s
    return estimate.tokens_per_s / int(row["gpus"])  # gbs x seq / step time, per GPU


def row_command(row: dict[str, Any], moe: bool) -> tuple[str, str]:
    """(``fabricsim train`` line, the key of its JSON output that is the row's prediction)."""
    line = train_command(str(row["model"]), str(row["system"]), int(row["gbs"]), int(row["seq"]), row_layout(row),
                         row_options(row), moe)
    output = "step_time_s" if row["metric"] == "step_time_s" else f"tokens_per_s / {int(row['gpus'])}"
    return line, output


def row_format(row: dict[str, Any]) -> str:
    """The row's GEMM format (bf16, fp8, fp8_block, mxfp8, nvfp4): its dtype group."""
    return gemm_format(str(row["dtype"]), row.get("recipe"))


def _entry(row: dict[str, Any], predicted: float, moe: bool = False) -> ValidationEntry:
    unit = "s" if row["metric"] == "step_time_s" else "tokens/s/GPU"
    line, output = row_command(row, moe)
    detail = (
        f"{row['system']} {row['gpus']} GPUs {row['model']} {row['dtype']}"
        f"{'/' + row['recipe'] if row.get('recipe') else ''} tp{row['tp']} pp{row['pp']} cp{row['cp']} "
        f"vp{row.get('vp', 1)} ep{row.get('ep', 1)} mbs{row['mbs']} gbs{row['gbs']}"
    )
    return ValidationEntry(
        id=row["id"], metric=str(row["metric"]), unit=unit, measured=float(row["value"]), predicted=predicted,
        source=str(row["source"]), detail=detail, command=line, command_output=output,
    )


@lru_cache(maxsize=1)
def rows() -> tuple[dict[str, Any], ...]:
    return tuple(load_entries(DATA_FILE))


def _holdout(
    selected: list[dict[str, Any]], source: SpecSource, kind: str, key: Callable[[dict[str, Any]], str],
    system_for: Callable[[dict[str, Any], SystemSpec], SystemSpec],
) -> list[HoldoutError]:
    out = []
    for group in sorted({key(row) for row in selected}):
        errors = []
        for row in (r for r in selected if key(r) == group):
            system = system_for(row, source.load_system(str(row["system"])))
            predicted = predicted_value(row, estimate_row(row, source, system))
            errors.append(abs(predicted - float(row["value"])) / float(row["value"]))
        out.append(HoldoutError(kind, group, mean(errors), len(errors)))
    return out


def holdout_errors(selected: list[dict[str, Any]], source: SpecSource) -> list[HoldoutError]:
    """Leave-one-device-out and leave-one-dtype-out mean |errors| (module docstring)."""
    by_device = _holdout(selected, source, "leave-one-device-out", lambda r: str(r["system"]),
                         lambda r, s: system_without_kernels(s))
    by_dtype = _holdout(selected, source, "leave-one-dtype-out", row_format,
                        lambda r, s: system_without_format(s, row_format(r)))
    return by_device + by_dtype


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """Every row that fabricsim can lay out; a row it refuses is reported in ``skipped``."""
    entries, usable, skipped = [], [], []
    for row in rows():
        try:
            estimate = estimate_row(row, source)
        except FabricsimError as exc:  # e.g. a layout the engine cannot lay out yet
            skipped.append((str(row["id"]), str(exc)))
            continue
        entries.append(_entry(row, predicted_value(row, estimate), source.load_model(str(row["model"])).is_moe))
        usable.append(row)
    held = tuple(holdout_errors(usable, source)) if holdout else ()
    return SuiteResult(
        "training-public", tuple(entries), calibration=CALIBRATION, holdout=held, skipped=tuple(skipped)
    )
