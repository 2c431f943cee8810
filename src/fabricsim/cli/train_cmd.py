"""``fabricsim train``: estimate one training step of a model on a catalog system.

The parameters are forwarded by name to :func:`fabricsim.api.train` (analytic) or
:func:`fabricsim.api.simulate_train` (other fidelities), which type and check them: a new option
is one parameter here and one keyword there.
"""

from __future__ import annotations

import typer

from fabricsim.cli import fidelity as fidelity_flags
from fabricsim.cli import options as o
from fabricsim.cli import train_settings as ts
from fabricsim.cli.fastpath import analytic_train

OFFLOAD = typer.Option(None, "--offload", help="tensor classes kept below HBM: optimizer,weights,activations")
OFFLOAD_TIER = typer.Option(None, "--offload-tier", help="host | grace | cxl (default host)")


def train(
    model: str = o.MODEL,
    system: str = o.SYSTEM,
    gpus: int = o.GPUS,
    global_batch: int = o.GLOBAL_BATCH,
    seq_len: int = o.SEQ_LEN,
    tp: int | None = o.TP,
    pp: int | None = o.PP,
    dp: int | None = o.DP,
    cp: int | None = o.CP,
    ep: int | None = o.EP,
    vpp: int | None = o.VPP,
    micro_batch: int | None = o.MICRO_BATCH,
    zero: int | None = o.ZERO,
    recompute: str | None = o.RECOMPUTE,
    sequence_parallel: bool | None = o.SEQUENCE_PARALLEL,
    dtype: str | None = o.TRAIN_DTYPE,
    expert_tp: int | None = ts.EXPERT_TP_OPTION,
    flash_attention: bool | None = ts.FLASH_OPTION,
    overlap_grad_reduce: bool | None = ts.GRAD_OPTION,
    overlap_param_gather: bool | None = ts.PARAM_OPTION,
    tp_comm_overlap: bool | None = ts.TP_COMM_OPTION,
    a2a_overlap: bool | None = ts.A2A_OPTION,
    fp8_recipe: str | None = ts.FP8_RECIPE_OPTION,
    capacity_factor: float | None = ts.CAPACITY_OPTION,
    moe_dispatcher: str | None = ts.DISPATCHER_OPTION,
    cross_entropy: str | None = ts.CROSS_ENTROPY_OPTION,
    mtp_layers: int | None = ts.MTP_OPTION,
    account_for_embedding_in_pipeline_split: bool | None = ts.SPLIT_EMBEDDING_OPTION,
    account_for_loss_in_pipeline_split: bool | None = ts.SPLIT_LOSS_OPTION,
    grad_reduce_in_fp32: bool | None = ts.GRAD_FP32_OPTION,
    pipeline_layout: str | None = ts.PIPELINE_LAYOUT_OPTION,
    recompute_modules: str | None = ts.RECOMPUTE_MODULES_OPTION,
    lora_rank: int | None = ts.LORA_OPTION,
    offload: str | None = OFFLOAD,
    offload_tier: str | None = OFFLOAD_TIER,
    as_json: bool = o.JSON,
    fidelity: str = o.FIDELITY,
    trace: str | None = o.TRACE_OUT,
    seeds: int | None = o.SEEDS,
    straggler: str | None = o.STRAGGLER,
    jitter: float = o.JITTER,
    link_jitter: float = o.LINK_JITTER,
    ecmp_rehash: bool = o.ECMP_REHASH,
    seed: int = o.SEED,
    topology: str | None = o.TOPOLOGY,
    placement: str | None = o.PLACEMENT,
    nic: str | None = o.NIC,
    background: str | None = o.BACKGROUND,
    transport: str | None = o.TRANSPORT,
    ber: str | None = o.BER,
    cc_params: list[str] | None = o.CC_PARAM,
) -> None:
    """Step time, MFU/HFU, memory per GPU and where the time goes, for one parallel layout."""
    params = dict(locals())  # first: exactly the command's parameters
    params.pop("as_json")
    simulation, inputs = o.split(params, *o.SIMULATION_KEYS)
    fabric, inputs = o.split(inputs, *o.FABRIC_KEYS, *o.PACKET_KEYS)
    flags = fidelity_flags.SimulationFlags(**simulation, fabric=fabric)
    if flags.wants_engine:  # --fidelity simulate|flow, --trace or variability: the event-driven engine
        fidelity_flags.run_train(flags, inputs, as_json)
        return
    analytic_train(inputs, as_json)  # the fast path's code too (cli/fastpath.py)
