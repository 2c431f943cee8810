"""``fabricsim collective OP``: time one collective on a catalog system (nccl-tests definitions);
``--fidelity flow|packet`` runs its schedule on a simulated network instead of the closed form."""

from __future__ import annotations

from enum import StrEnum

import typer

from fabricsim.cli.common import JSON_OPTION, SYSTEM_OPTION, emit
from fabricsim.cli.progress import PACKET_LABEL, working
from fabricsim.errors import FabricsimError, parse_choice


class CollectiveFidelity(StrEnum):
    ANALYTIC = "analytic"
    FLOW = "flow"
    PACKET = "packet"


def collective(
    op: str = typer.Argument(
        ..., help="all-reduce | all-gather | reduce-scatter | all-to-all | broadcast | reduce | send-recv"
    ),
    system: str = SYSTEM_OPTION,
    gpus: int = typer.Option(..., "--gpus", help="number of GPUs in the group"),
    size: str = typer.Option(
        ..., "--size", help="message size in bytes (nccl-tests' S), e.g. 1GiB, 512MB, 1048576; 1Gb (bits) is refused"
    ),
    algorithm: str = typer.Option(
        "auto", "--algorithm", help="auto | ring | tree | halving-doubling | nvls | sharp | hierarchical | direct"
    ),
    fidelity: str = typer.Option(
        "analytic", "--fidelity", help="analytic (NCCL cost model) | flow (max-min flows) | packet (queues, PFC, CC)"
    ),
    topology: str = typer.Option(
        None,
        "--topology",
        help="flow/packet: builder string (fat-tree:k=8,latency=1us,spine_gbps=800, ...; see traffic --help)"
        " instead of the system's fabric",
    ),
    routing: str = typer.Option(None, "--routing", help="flow/packet: ecmp (default) | spray | adaptive"),
    seed: int = typer.Option(None, "--seed", help="flow/packet: seed of the ECMP hash and spraying (default 0)"),
    cc: str = typer.Option(None, "--cc", help="packet: sender congestion control none (default) | dcqcn | hpcc | nscc"),
    lossless: str = typer.Option(None, "--lossless", help="packet: pfc (default) | credit | none (drops)"),
    spray: bool = typer.Option(False, "--spray", help="packet: spray packets over equal-cost paths"),
    transport: str = typer.Option(
        None, "--transport", help="packet: roce | ib | uet, setting --cc, --lossless, --spray and parameters"
    ),
    ber: str = typer.Option(None, "--ber", help="packet: post-FEC bit-error rate of every link, e.g. 1e-12"),
    cc_param: list[str] = typer.Option([], "--cc-param", help="packet: NAME=VALUE override, repeatable"),
    buffer: str = typer.Option(None, "--buffer", help="packet: shared buffer per switch (default 16MB x Gb/s / 50)"),
    trace: str = typer.Option(None, "--trace", help="packet: write a Perfetto trace of the steps, rates and queues"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Estimate time, algbw and busbw of one collective. With --fidelity flow or packet, its schedule
    runs on the system's fabric (or --topology); packet adds PFC pauses, ECN marking, queues, drops
    and the flow-fidelity time next to it."""
    from fabricsim import api

    kind = parse_choice("fidelity", fidelity, CollectiveFidelity)
    if kind == CollectiveFidelity.ANALYTIC:
        network = {
            "--topology": topology,
            "--routing": routing,
            "--seed": seed,
            "--cc": cc,
            "--lossless": lossless,
            "--buffer": buffer,
            "--trace": trace,
            "--spray": spray or None,
            "--cc-param": cc_param or None,
            "--transport": transport,
            "--ber": ber,
        }
        given = [name for name, value in network.items() if value is not None]
        if given:
            raise FabricsimError("fidelity", f"{', '.join(given)} need --fidelity flow or packet")
        result = api.collective(op, system=system, gpus=gpus, size=size, algorithm=algorithm)
        emit(result.to_json(), as_json, "collective_table")
        return
    if kind == CollectiveFidelity.PACKET:
        from fabricsim.api.transports import PacketOptions, with_transport

        chosen = with_transport(PacketOptions(cc, lossless, spray, tuple(cc_param)),
                                PacketOptions(None, None, False, ()), transport, ber)  # fmt: skip
        cc, lossless, spray, cc_param = chosen.cc, chosen.lossless, chosen.spray, list(chosen.cc_params)
    elif transport is not None or ber is not None:
        raise FabricsimError("fidelity", "--transport and --ber need --fidelity packet")
    _network(kind, (op, system, gpus, size, algorithm),
             (topology, routing, seed, cc, lossless, spray, tuple(cc_param), buffer), trace, as_json)  # fmt: skip


def _network(kind, what, how, trace, as_json) -> None:
    """The flow / packet branch: check the trace path, run, write the trace, print."""
    from fabricsim.api.network_collective import NetworkCollectiveSpec, network_collective
    from fabricsim.io.results import check_output_path

    op, system, gpus, size, algorithm = what
    topology, routing, seed, cc, lossless, spray, cc_params, buffer = how
    if trace is not None and kind == CollectiveFidelity.PACKET:
        check_output_path(trace, "trace")  # before the run, not after it
    spec = NetworkCollectiveSpec(
        op=op,
        system=system,
        gpus=gpus,
        size=size,
        algorithm=algorithm,
        fidelity=kind.value,
        topology=topology,
        routing="ecmp" if routing is None else routing,
        seed=0 if seed is None else seed,
        cc=cc,
        lossless=lossless,
        spray=spray,
        cc_params=cc_params,
        buffer=buffer,
        trace=trace is not None,
    )
    with working(PACKET_LABEL if kind == CollectiveFidelity.PACKET else "network simulation"):
        out = network_collective(spec)
    if trace is not None:
        from fabricsim.io.collective_trace import write_collective_trace

        write_collective_trace(trace, out.step_runs, out.link_names)
    emit(out.result.to_json(), as_json, "network_collective_table")
