"""``fabricsim infer``: TTFT, TPOT and throughput of one static batch.

The parameters are forwarded by name to :func:`fabricsim.api.infer` (analytic) or
:func:`fabricsim.api.simulate_infer` (other fidelities), which type and check them.
"""

from __future__ import annotations

import typer

from fabricsim.cli import fidelity as fidelity_flags
from fabricsim.cli import options as o
from fabricsim.cli.common import emit
from fabricsim.errors import FabricsimError


def infer(
    model: str = o.MODEL,
    system: str = o.SYSTEM,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs (replicas = gpus / (pp x max(tp, ep)))"),
    batch: str = typer.Option("max", "--batch", help="sequences per replica, or 'max' for the largest whose KV fits"),
    input_len: int = o.INPUT_LEN,
    output_len: int = o.OUTPUT_LEN,
    tp: int | None = o.TP,
    pp: int | None = o.PP,
    ep: int | None = o.EP,
    dtype: str | None = o.INFER_DTYPE,
    kv_dtype: str | None = o.KV_DTYPE,
    cuda_graphs: bool = o.CUDA_GRAPHS,
    kv_spill: str | None = typer.Option(
        None, "--kv-spill", help="spill tier link for KV that HBM cannot hold: pcie-gen5 (host memory), cxl2, cxl3"),
    kv_spill_capacity: str | None = typer.Option(
        None, "--kv-spill-capacity", help="spill capacity per GPU, e.g. 256GB (default 256 GB)"),
    as_json: bool = o.JSON,
    fidelity: str = o.FIDELITY,
    trace: str | None = o.TRACE_OUT,
    seeds: int | None = o.SEEDS,
    straggler: str | None = o.STRAGGLER,
    jitter: float = o.JITTER,
    link_jitter: float = o.LINK_JITTER,
    seed: int = o.SEED,
    topology: str | None = o.TOPOLOGY,
    placement: str | None = o.PLACEMENT,
    nic: str | None = o.NIC,
    background: str | None = o.BACKGROUND,
    transport: str | None = o.TRANSPORT,
    ber: str | None = o.BER,
    cc_params: list[str] | None = o.CC_PARAM,
) -> None:
    """Prefill (TTFT) and decode (TPOT) of a batch, tokens/s, KV and memory per GPU."""
    params = dict(locals())  # first: exactly the command's parameters
    from fabricsim import api

    params.pop("as_json")
    simulation, inputs = o.split(params, *o.SIMULATION_KEYS)
    fabric, inputs = o.split(inputs, *o.FABRIC_KEYS, *o.PACKET_KEYS)
    flags = fidelity_flags.SimulationFlags(**simulation, fabric=fabric)
    if flags.wants_engine:  # --fidelity simulate, --trace or variability: decode through the engine
        for key in ("kv_spill", "kv_spill_capacity"):  # the engine path has no spill tier yet
            if inputs.pop(key) is not None:
                raise FabricsimError(key.replace("_", "-"), "is analytic only", "drop it or use --fidelity analytic")
        fidelity_flags.run_infer(flags, inputs, as_json)
        return
    emit(api.infer(**inputs).to_json(), as_json, "infer_table")
