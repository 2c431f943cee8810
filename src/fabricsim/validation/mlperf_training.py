"""MLPerf Training (v4.1, v5.0, v5.1) as cross-vendor validation: per-step time of the closed-division
LLM submissions (GPT-3 175B, Llama 3.1 405B and 8B pretraining, Llama 2 70B LoRA fine-tuning) on the
catalog's systems, NVIDIA and AMD (layer L8).

Rows (``data/mlperf-training.yaml``) come from the mlcommons/training_results_v4.1 / v5.0 / v5.1
repositories: the layout, micro-batch, precision and recipe from the submission's ``config_*.sh`` (the
one its README names), the measured step time from its ``result_*.txt`` logs (how, per row, in
``source``). No constant of fabricsim is fitted on them: every row is out-of-sample.

What is compared, and why not time-to-train: a submission's score is the wall time until the
validation target is reached, and the number of steps that takes varies from run to run (MLPerf
scores the mean of several runs, dropping the fastest and slowest); the benchmark's reference
convergence (tokens to the target) would turn a step-time model into a time-to-train model, but the
logs let us check the step itself, so the rows compare seconds per training step, excluding
evaluation, checkpoint-free (MLPerf runs save none) and after warm-up. Each row's prediction is
``fabricsim train`` on the same model, system and layout, with the settings the submission's config
sets (``settings``) over the suite defaults of :func:`row_options` (those of the public training
suite, whose sources are given there, plus the distributed optimizer's overlapped parameter
all-gather that every NeMo MLPerf config turns on: ``OVERLAP_PARAM_GATHER=True`` in config_common.sh).

Besides the per-row errors the suite reports, for each vendor, its mean |error| (``per-vendor``) and
the mean |error| over the rows of every other vendor (``leave-one-vendor-out``): since nothing is
fitted, the latter says how far a conclusion drawn from the other vendors' rows carries.
Submissions the suite cannot predict are listed in ``skipped`` with the reason (``not_added`` in the
data file): Google's TPU GPT-3 rows (int8 training, and evaluation inside the logged blocks) and the
systems the catalog lacks. The LoRA rows run ``train --lora-rank 16`` (frozen base, adapters on the
attention projections, as the submissions' NeMo ``peft`` configs).
"""

from __future__ import annotations

from functools import lru_cache
from statistics import mean
from typing import Any

from fabricsim.engine.training.analytic import TrainingEstimate, estimate_training
from fabricsim.errors import FabricsimError
from fabricsim.validation.base import HoldoutError, SpecSource, SuiteResult, ValidationEntry, load_entries
from fabricsim.validation.commands import model_file, train_command
from fabricsim.validation.training_public import CROSS_ENTROPY_BY_FRAMEWORK, GRAD_REDUCE_IN_FP32, row_layout
from fabricsim.workload.training import TrainingOptions

DATA_FILE = "mlperf-training.yaml"
CALIBRATION = (
    "out-of-sample: no constant fitted on these rows (MLPerf Training closed division, per-step time "
    "from the submissions' logs); compute calibrated on each device's kernel benchmarks in the catalog, "
    "devices without a kernels block on their generation defaults (catalog show says which)"
)


def row_model(row: dict[str, Any]) -> str:
    """The model a row names: a catalog name, or (``model_file``) a file shipped in ``data/models``."""
    return model_file(str(row["model_file"])) if "model_file" in row else str(row["model"])


def row_options(row: dict[str, Any]) -> TrainingOptions:
    """Suite defaults (module docstring) with what the submission's config sets otherwise (``settings``)."""
    defaults: dict[str, Any] = {
        "flash_attention": True, "overlap_grad_reduce": True, "overlap_param_gather": True, "overlap_tp_comm": True,
        "cross_entropy": CROSS_ENTROPY_BY_FRAMEWORK["dgxc"], "grad_reduce_in_fp32": GRAD_REDUCE_IN_FP32,
    }
    return TrainingOptions(**{**defaults, **row.get("settings", {})}, fp8_recipe=row.get("recipe"))


def estimate_row(row: dict[str, Any], source: SpecSource) -> TrainingEstimate:
    """fabricsim's estimate of one row (its ``step_time_s`` is the prediction)."""
    model = source.load_model(row_model(row))
    system = source.load_system(str(row["system"]))
    return estimate_training(model, system, row_layout(row), int(row["gbs"]), int(row["seq"]), row_options(row))


def _entry(row: dict[str, Any], estimate: TrainingEstimate) -> ValidationEntry:
    layout = row_layout(row)
    command = train_command(row_model(row), str(row["system"]), int(row["gbs"]), int(row["seq"]), layout,
                            row_options(row))
    detail = (
        f"{row['vendor']} MLPerf Training v{row['round']} {row['benchmark']} ({row['submission']}): {row['system']} "
        f"{row['gpus']} accelerators {row['dtype']}/{row['recipe']} tp{row['tp']} pp{row['pp']} cp{row['cp']} "
        f"vp{row['vp']} dp{layout.data_parallel} mbs{row['mbs']} gbs{row['gbs']} seq{row['seq']}"
    )
    if not estimate.fits:  # the run did fit: fabricsim's memory model is pessimistic here (reported, not hidden)
        detail += (f"; fabricsim's memory model puts it at {estimate.memory_per_gpu_bytes / 1e9:.0f} GB of "
                   f"{estimate.memory_capacity_bytes / 1e9:.0f} GB (does not fit)")
    return ValidationEntry(
        id=str(row["id"]), metric="step_time_s", unit="s", measured=float(row["value"]), predicted=estimate.step_time_s,
        source=str(row["source"]), detail=detail, command=command, command_output="step_time_s",
    )


@lru_cache(maxsize=1)
def rows() -> tuple[dict[str, Any], ...]:
    return tuple(load_entries(DATA_FILE))


@lru_cache(maxsize=1)
def not_added() -> tuple[dict[str, Any], ...]:
    """Submissions the suite does not predict, each with its reason."""
    return tuple(load_entries(DATA_FILE, "not_added"))


def vendor_errors(entries: list[ValidationEntry], vendors: dict[str, str]) -> list[HoldoutError]:
    """Per vendor: the mean |error| of its rows (``per-vendor``) and of every other vendor's rows
    (``leave-one-vendor-out``); ``vendors`` maps a row id to its vendor."""
    out = []
    for vendor in sorted(set(vendors.values())):
        own = [abs(e.error) for e in entries if vendors[e.id] == vendor]
        others = [abs(e.error) for e in entries if vendors[e.id] != vendor]
        out.append(HoldoutError("per-vendor", vendor, mean(own), len(own)))
        if others:
            out.append(HoldoutError("leave-one-vendor-out", vendor, mean(others), len(others)))
    return out


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """Every row fabricsim can lay out; the others (and the ``not_added`` submissions) in ``skipped``.
    The per-vendor errors need no re-run, so they are reported whether or not ``holdout`` is asked."""
    entries, skipped = [], [(str(r["id"]), str(r["reason"])) for r in not_added()]
    for row in rows():
        try:
            entries.append(_entry(row, estimate_row(row, source)))
        except FabricsimError as exc:  # a layout the engine cannot lay out
            skipped.append((str(row["id"]), str(exc)))
    vendors = {str(r["id"]): str(r["vendor"]) for r in rows()}
    return SuiteResult(
        "mlperf-training", tuple(entries), calibration=CALIBRATION, skipped=tuple(skipped),
        holdout=tuple(vendor_errors(entries, vendors)) if entries else (),
    )
