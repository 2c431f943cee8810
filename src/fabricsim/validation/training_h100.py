"""Megatron-Core r0.8.0 weak scaling on H100: GPT 1.7B-462B on 48-6,144 GPUs (layer L8).

Rows (``data/training-megatron-h100-2024.yaml``: NVIDIA/Megatron-LM README and its model table,
2024-07-15) are used for validation only. Each runs on the catalog's ``dgx-h100`` with what the
source publishes -- the model (hidden size, heads, layers; vocabulary 131,072; sequence 4,096), the
layout (TP, PP, DP), the global batch and the overlaps it names (``--overlap-grad-reduce
--overlap-param-gather --tp-comm-overlap``, which imply the distributed optimizer, ZeRO-1, and
sequence parallelism) -- and Megatron-LM's defaults for what it does not publish: BF16 (the MFU
column is TFLOP/s over the BF16 peak) with fp32 gradients (at 937571c ``--bf16`` forces
``accumulate_allreduce_grads_in_fp32``, megatron/training/arguments.py:299-308; no switch to bf16
reduction existed before 2025), micro-batch 1, no interleaving, no recomputation, the
unfused cross entropy and Megatron's GPT (a GeLU MLP of 4h), with untied input and output
embeddings: the table's model sizes are those parameter counts (e.g. 1.7B = 24 x 12h² + 2 x 131,072
x h for h = 2048; tied it would be 1.5B). The metric is model
TFLOP/s per GPU as Megatron counts it (``num_floating_point_operations``: full attention matrix),
which fabricsim's model FLOPs equal.

The unpublished micro-batch size matters here: with four sequences per data-parallel rank the
gradient reduction can hide only under the last micro-batch's backward, and a larger micro-batch
runs fatter GEMMs; the result says which defaults were used (``calibration``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from fabricsim.engine.training.analytic import TrainingEstimate, estimate_training
from fabricsim.specs import ModelSpec, ParallelLayout, Recompute, SystemSpec
from fabricsim.validation.base import (
    HoldoutError,
    SpecSource,
    SuiteResult,
    ValidationEntry,
    load_entries,
    mean_abs_error,
    system_without_kernels,
)
from fabricsim.validation.commands import model_file, train_command
from fabricsim.validation.training import gpt_model
from fabricsim.workload.training import TrainingOptions

DATA_FILE = "training-megatron-h100-2024.yaml"
SYSTEM = "dgx-h100"
OPTIONS = TrainingOptions(overlap_grad_reduce=True, overlap_param_gather=True, overlap_tp_comm=True)
CALIBRATION = (
    "out-of-sample: no constant fitted on these rows; compute calibrated on the H100's kernel benchmarks "
    "(devices/h100-sxm.yaml 'kernels') at its sustained clock (S5). Unpublished settings at Megatron-LM's "
    "defaults: micro-batch 1, no interleaving, no recomputation, unfused cross entropy, fp32 gradient reduction"
)


@lru_cache(maxsize=1)
def rows() -> tuple[dict[str, Any], ...]:
    return tuple(load_entries(DATA_FILE))


def row_model(row: dict[str, Any]) -> ModelSpec:
    """The row's GPT: its dimensions, vocabulary and sequence length, untied embeddings (module docstring)."""
    dims = {key: row[key] for key in ("hidden_size", "num_layers", "attention_heads")}
    model = gpt_model(f"gpt-{row['model_size']}", {**dims, "vocab_size": row["vocab"]})
    return model.model_copy(update={"max_position_embeddings": int(row["seq"]), "tie_word_embeddings": False})


def model_stem(row: dict[str, Any]) -> str:
    """Name of the shipped file (``data/models``) holding the row's model."""
    return f"megatron-core-gpt-{str(row['model_size']).lower()}"


def estimate_row(row: dict[str, Any], system: SystemSpec) -> TrainingEstimate:
    """fabricsim's estimate of one row (module docstring) on ``system``."""
    model = row_model(row)
    tp = int(row["tp"])
    layout = ParallelLayout(
        tensor_parallel=tp,
        pipeline_parallel=int(row["pp"]),
        data_parallel=int(row["dp"]),
        zero_stage=1,
        recompute=Recompute.NONE,
        sequence_parallel=tp > 1,
        dtype="bf16",
    )
    return estimate_training(model, system, layout, int(row["gbs"]), int(row["seq"]), OPTIONS)


def _entries(system: SystemSpec) -> list[ValidationEntry]:
    entries = []
    for row in rows():
        estimate = estimate_row(row, system)
        layout = estimate.layout
        entries.append(
            ValidationEntry(
                id=str(row["id"]),
                metric=str(row["metric"]),
                unit="TFLOP/s",
                measured=float(row["value"]),
                predicted=estimate.model_flops_per_gpu_s / 1e12,  # Megatron's count = fabricsim's model FLOPs
                source=str(row["source"]),
                detail=f"{row['gpus']} H100 tp{layout.tensor_parallel} pp{layout.pipeline_parallel} "
                f"dp{layout.data_parallel} gbs{row['gbs']} (MFU {row['mfu_percent']}%)",
                command=train_command(model_file(model_stem(row)), SYSTEM, estimate.global_batch, estimate.seq_len,
                                      layout, OPTIONS),
                command_output="model_tflops_per_gpu",
            )
        )
    return entries


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """The nine rows; ``holdout``: again with the H100's kernel benchmarks removed (generation defaults)."""
    system = source.load_system(SYSTEM)
    entries = tuple(_entries(system))
    held: tuple[HoldoutError, ...] = ()
    if holdout:
        again = _entries(system_without_kernels(system))
        pairs = [(e.measured, e.predicted) for e in again]
        held = (HoldoutError("leave-one-device-out", SYSTEM, mean_abs_error(pairs), len(pairs)),)
    return SuiteResult(name="training-h100", entries=entries, calibration=CALIBRATION, holdout=held)
