"""The CLI command that reproduces a validation row (layer L8).

Every row of ``fabricsim validate --json`` carries ``command``: a ``fabricsim train`` / ``serve`` /
``collective`` line with every setting the row uses spelled out (defaults included, so a
difference from a user's own run is visible: tied embeddings live in the model file it names,
micro-batch, recomputation, dtype, overlaps, gradient precision...), and ``command_output``: which
key of that command's ``--json`` output is the row's prediction (``KEY``, ``KEY x F`` or ``KEY / D``).
A setting the CLI has no option for is named in the row's ``command_note`` instead of being faked;
tests/validation/test_commands.py runs a sample of the commands through the CLI.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from fabricsim.specs import ModelSpec, ParallelLayout
from fabricsim.validation.base import data_path
from fabricsim.workload.training import TrainingOptions

MODELS_DIR = "models"
"""Folder of ``data/`` holding the model files the commands name (rows whose model is not a catalog name)."""


def _switch(flag: str, on: bool) -> str:
    return f"--{flag}" if on else f"--no-{flag}"


def train_command(
    model: str, system: str, global_batch: int, seq_len: int, layout: ParallelLayout, options: TrainingOptions,
    moe: bool = False,
) -> str:
    """``fabricsim train ... --json`` for one estimate: ``model`` a catalog name or a file path; every
    layout field and framework setting explicit (``moe``: the model has experts, so expert TP is given)."""
    args = [
        "fabricsim", "train", "--model", model, "--system", system, "--gpus", str(layout.gpus),
        "--global-batch", str(global_batch), "--seq-len", str(seq_len),
        "--tp", str(layout.tensor_parallel), "--pp", str(layout.pipeline_parallel),
        "--dp", str(layout.data_parallel), "--cp", str(layout.context_parallel),
        "--ep", str(layout.expert_parallel), "--vpp", str(layout.virtual_stages),
        "--micro-batch", str(layout.micro_batch_size), "--zero", str(layout.zero_stage),
        "--recompute", layout.recompute.value, _switch("sequence-parallel", layout.sequence_parallel),
        "--dtype", layout.dtype,
    ]
    if moe:
        args += ["--expert-tp", str(layout.expert_tp)]
    args += [
        _switch("flash-attention", options.flash_attention),
        _switch("overlap-grad-reduce", options.overlap_grad_reduce),
        _switch("overlap-param-gather", options.overlap_param_gather),
        _switch("tp-comm-overlap", options.overlap_tp_comm),
        _switch("a2a-overlap", options.a2a_overlap),
    ]
    if options.fp8_recipe is not None:
        args += ["--fp8-recipe", options.fp8_recipe]
    if options.capacity_factor is not None:
        args += ["--capacity-factor", repr(options.capacity_factor)]
    args += [
        "--moe-dispatcher", options.moe_dispatcher, "--cross-entropy", options.cross_entropy,
        "--mtp-layers", str(options.mtp_layers),
        _switch("account-for-embedding-in-pipeline-split", options.account_for_embedding),
        _switch("account-for-loss-in-pipeline-split", options.account_for_loss),
        _switch("grad-reduce-in-fp32", options.gradients_in_fp32(layout.dtype)),
    ]
    if options.pipeline_layout is not None:
        args += ["--pipeline-layout", options.pipeline_layout]
    if options.recompute_modules is not None:
        args += ["--recompute-modules", ",".join(options.recompute_modules)]
    if options.lora_rank:
        args += ["--lora-rank", str(options.lora_rank)]
    return shlex.join([*args, "--json"])


def collective_command(op: str, system: str, gpus: int, size_bytes: int) -> str:
    """``fabricsim collective OP ... --json`` (NCCL-like automatic algorithm choice)."""
    return shlex.join(["fabricsim", "collective", op, "--system", system, "--gpus", str(gpus),
                       "--size", str(size_bytes), "--algorithm", "auto", "--json"])


def model_file(stem: str) -> str:
    """Path of the shipped model file ``data/models/STEM.yaml`` (a row whose model is built from its
    own dimensions names it; tests/validation/test_commands.py checks each loads as the row's model)."""
    return str(Path(data_path(f"{MODELS_DIR}/{stem}.yaml")))


def model_document(model: ModelSpec, source: str) -> str:
    """The YAML text of a model file for ``model`` (how ``data/models`` was written; kept for updates)."""
    everything = model.model_dump(exclude={"name", "sources"})
    fields = model.model_dump(exclude={"name", "sources"}, exclude_defaults=True)
    fields |= {key: everything[key] for key in SHOWN_ALWAYS}  # what a generic GPT config.json may differ in
    return yaml.safe_dump({"source": source, **fields}, sort_keys=False, width=120)


SHOWN_ALWAYS = ("vocab_size", "hidden_act", "max_position_embeddings", "tie_word_embeddings")
"""Model fields a model file states even at their default."""
