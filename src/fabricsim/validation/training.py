"""Training-step validation: Megatron-LM SC'21 Table 1 and Korthikanti et al. 2022 (layer L8).

Every row runs on the catalog's ``dgx-a100`` (Selene) with the *same* global constants
(:mod:`fabricsim.transformer.constants`); the model is built from the row's own dimensions (GPT:
GeLU MLP of 4h, vocabulary 51200, sequence 2048). What differs between the two papers is what
their software did, applied to all rows of a paper alike:

* Megatron SC'21 (Narayanan et al.): fp16, full activation recomputation, no sequence
  parallelism, unfused attention (2021: no flash attention), gradient all-reduce after the
  backward pass (Megatron's local DDP, not overlapped) in fp16 (Megatron-LM v2.5 keeps fp16
  gradients unless ``--accumulate-allreduce-grads-in-fp32``, which examples/sc21 and
  examples/pretrain_gpt3_175B.sh do not set), micro-batch 1 and the plain 1F1B schedule
  (Megatron-LM's default; Table 1 does not list micro-batch or model chunks per row, so no row
  gets its own). The metric is achieved hardware TFLOP/s per GPU as the paper counts it (its
  96·B·s·l·h² formula; our hardware FLOPs equal it for these models).
* Korthikanti et al. 2022: fp16, sequence parallelism + selective recomputation, unfused
  attention, data-parallel size 1, fp32 gradients (the paper's Fig. 1 counts 18 bytes of
  parameters and optimizer state per parameter: 16-bit weights, fp32 gradients, 12 B of Adam),
  and calculon's transcription of the configurations
  (22B: micro-batch 4, 175B and 530B: 3 model chunks, 1T: 1). Metrics: MFU and iteration time.

The suite is out-of-sample: the compute model is calibrated on kernel microbenchmarks only (the
A100's cuBLAS GEMM, FlashAttention-2 and STREAM figures in the catalog, and the kernel-model
constants of :mod:`fabricsim.transformer.kernels`); no constant was fitted on these rows. The
result says so (``calibration``, printed under the table).
"""

from __future__ import annotations

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
from fabricsim.workload.training import TrainingOptions

MEGATRON_FILE = "training-megatron-sc21-a100.yaml"
KORTHIKANTI_FILE = "training-korthikanti-2022-a100.yaml"
SYSTEM = "dgx-a100"
VOCAB = 51200
SEQ_LEN = 2048

MEGATRON_OPTIONS = TrainingOptions(flash_attention=False, overlap_grad_reduce=False)
KORTHIKANTI_OPTIONS = TrainingOptions(flash_attention=False, overlap_grad_reduce=False, grad_reduce_in_fp32=True)
# calculon-ai/calculon validation/seqsel/tab5/*_seqsel.json @ caa4b11f (micro-batch, model chunks)
KORTHIKANTI_SCHEDULE = {"22b": (4, 1), "175b": (1, 3), "530b": (1, 3), "1t": (1, 1)}
CALIBRATION = (
    "out-of-sample: no constant fitted on these rows; compute calibrated on A100 kernel benchmarks "
    "(cuBLAS BF16 GEMM G18, FlashAttention-2 A2, STREAM B2) and kernel-level sweeps (H100 XLA K sweep "
    "G33, FA3 seq/head-dim A6-A8), at the A100's sustained clock at its power limit (1305 MHz, S4: NVIDIA's "
    "FP64 HPL rating, ASSUMED for fp16 tensor work, no BF16/FP16 clock measurement found); one "
    "device and one dtype (fp16 runs on the BF16 GEMM figure), so leave-one-dtype-out is the suite itself"
)
# Dimensions of the Korthikanti models, from the MFU rows of the same file (the time rows omit them).
GPT3_175B = {"hidden_size": 12288, "num_layers": 96, "attention_heads": 96}


def gpt_model(name: str, workload: dict[str, Any]) -> ModelSpec:
    """A Megatron GPT model of the row's dimensions (GeLU MLP of 4h, vocabulary 51200, tied embeddings)."""
    hidden = int(workload["hidden_size"])
    return ModelSpec(
        name=name,
        hidden_size=hidden,
        num_hidden_layers=int(workload["num_layers"]),
        num_attention_heads=int(workload["attention_heads"]),
        intermediate_size=4 * hidden,
        vocab_size=int(workload.get("vocab_size", VOCAB)),
        hidden_act="gelu",
        max_position_embeddings=SEQ_LEN,
        tie_word_embeddings=True,  # Megatron-LM GPT shares the input and output embedding
    )


def model_stem(model: ModelSpec) -> str:
    """Name of the shipped file (``data/models``) holding a Megatron GPT of these dimensions."""
    return f"megatron-gpt-h{model.hidden_size}-l{model.num_hidden_layers}-a{model.num_attention_heads}"


def command(estimate: TrainingEstimate, model: ModelSpec, options: TrainingOptions, system: str = SYSTEM) -> str:
    """The ``fabricsim train`` line of one estimate of a GPT built from a row's dimensions."""
    return train_command(model_file(model_stem(model)), system, estimate.global_batch, estimate.seq_len,
                         estimate.layout, options)


def _megatron_estimate(workload: dict[str, Any], system: SystemSpec) -> TrainingEstimate:
    dims = {**GPT3_175B, **workload}
    model = gpt_model("gpt", dims)
    tp, pp, dp = (int(workload[k]) for k in ("tensor_parallel", "pipeline_parallel", "data_parallel"))
    layout = ParallelLayout(
        tensor_parallel=tp,
        pipeline_parallel=pp,
        data_parallel=dp,
        recompute=Recompute.FULL,
        dtype="fp16",
    )
    return estimate_training(
        model, system, layout, int(workload["global_batch_size"]), SEQ_LEN, MEGATRON_OPTIONS
    )


def megatron_entries(system: SystemSpec) -> list[ValidationEntry]:
    """SC'21 Table 1 (hardware TFLOP/s per GPU) and the README's GPT-3 175B example, on ``system``
    (the catalog's :data:`SYSTEM`)."""
    entries = []
    for row in load_entries(MEGATRON_FILE):
        estimate = _megatron_estimate(row["workload"], system)
        layout = estimate.layout
        detail = f"tp{layout.tensor_parallel} pp{layout.pipeline_parallel} dp{layout.data_parallel}"
        line = command(estimate, gpt_model("gpt", {**GPT3_175B, **row["workload"]}), MEGATRON_OPTIONS)
        entries.append(
            ValidationEntry(
                id=row["id"],
                metric="hardware_tflops_per_gpu",
                unit="TFLOP/s",
                measured=float(row["value"]),
                predicted=estimate.hardware_flops_per_gpu_s / 1e12,
                source=row["source"],
                detail=detail,
                command=line,
                command_output="hardware_tflops_per_gpu",
            )
        )
        for extra in row.get("also_reported", []):
            if extra["metric"] == "iteration_time":
                entries.append(
                    ValidationEntry(
                        id=row["id"],
                        metric="iteration_time",
                        unit="s",
                        measured=float(extra["value"]),
                        predicted=estimate.step_time_s,
                        source=row["source"],
                        detail=detail,
                        command=line,
                        command_output="step_time_s",
                    )
                )
    return entries


def _korthikanti_estimate(
    key: str, dims: dict[str, Any], workload: dict[str, Any], system: SystemSpec
) -> TrainingEstimate:
    micro_batch, chunks = KORTHIKANTI_SCHEDULE[key]
    layout = ParallelLayout(
        tensor_parallel=int(workload["tensor_parallel"]),
        pipeline_parallel=int(workload["pipeline_parallel"]),
        data_parallel=int(workload["data_parallel"]),
        virtual_stages=chunks,
        micro_batch_size=micro_batch,
        recompute=Recompute.SELECTIVE,
        sequence_parallel=True,
        dtype="fp16",
    )
    model = gpt_model(f"gpt-{key}", dims)
    return estimate_training(model, system, layout, int(workload["global_batch_size"]), SEQ_LEN, KORTHIKANTI_OPTIONS)


def korthikanti_entries(system: SystemSpec) -> list[ValidationEntry]:
    """MFU (and HFU) and iteration time of the four Korthikanti et al. configurations."""
    rows = [
        r
        for r in load_entries(KORTHIKANTI_FILE)
        if r["id"].split("-")[1] in KORTHIKANTI_SCHEDULE and "tensor_parallel" in r["workload"]
    ]
    dims = {r["id"].split("-")[1]: r["workload"] for r in rows if "hidden_size" in r["workload"]}
    entries = []
    for row in rows:
        key = row["id"].split("-")[1]
        estimate = _korthikanti_estimate(key, dims[key], row["workload"], system)
        layout = estimate.layout
        detail = (
            f"tp{layout.tensor_parallel} pp{layout.pipeline_parallel} mb{layout.micro_batch_size} "
            f"vpp{layout.virtual_stages}"
        )
        if row["metric"] == "MFU":
            predicted, unit, output = estimate.mfu * 100.0, "%", "mfu x 100"
        else:
            predicted, unit, output = estimate.step_time_s, "s", "step_time_s"
        metric = "mfu" if row["metric"] == "MFU" else "iteration_time"
        entries.append(
            ValidationEntry(
                id=row["id"],
                metric=metric,
                unit=unit,
                measured=float(row["value"]),
                predicted=predicted,
                source=row["source"],
                detail=detail,
                command=command(estimate, gpt_model(f"gpt-{key}", dims[key]), KORTHIKANTI_OPTIONS),
                command_output=output,
            )
        )
    return entries


def run(source: SpecSource, holdout: bool = False) -> SuiteResult:
    """The ``training`` suite: Megatron SC'21 Table 1 + README example, then Korthikanti et al.;
    ``holdout``: the rows again with the A100's kernel benchmarks removed (generation defaults)."""
    system = source.load_system(SYSTEM)
    entries = tuple(megatron_entries(system) + korthikanti_entries(system))
    held: tuple[HoldoutError, ...] = ()
    if holdout:
        bare = system_without_kernels(system)
        again = megatron_entries(bare) + korthikanti_entries(bare)
        pairs = [(e.measured, e.predicted) for e in again]
        held = (HoldoutError("leave-one-device-out", SYSTEM, mean_abs_error(pairs), len(pairs)),)
    return SuiteResult(name="training", entries=entries, calibration=CALIBRATION, holdout=held)
