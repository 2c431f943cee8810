"""``fabricsim traffic PATTERN``: a synthetic traffic pattern on a topology, flow or packet fidelity."""

from __future__ import annotations

from enum import StrEnum

import typer

from fabricsim.cli.common import JSON_OPTION, emit
from fabricsim.cli.progress import PACKET_LABEL, progress_bar, working
from fabricsim.errors import FabricsimError, parse_choice

DEFAULT_SIZE = "64MiB"  # bytes per flow of a pattern


class TrafficFidelity(StrEnum):
    FLOW = "flow"
    PACKET = "packet"


def traffic(
    pattern: str = typer.Argument(
        None,
        help="permutation | all-to-all | incast | ring; with --fidelity packet also websearch | fb-hadoop;"
        " or none with --matrix FILE",
    ),
    topology: str = typer.Option(
        ...,
        "--topology",
        help="builder string (fat-tree:k=8, leaf-spine:..., dragonfly:a=8,p=4,h=4, torus:dims=8x8x8,"
        " ocs-torus:4x4x8,twisted=1) or system;"
        " links per tier: gbps= (or leaf_gbps=: host links, Gb/s), spine_gbps= (switch-switch links),"
        " core_gbps= (3-tier Clos aggregation-core), global_gbps= (dragonfly global links),"
        " latency= (every link: 1us, 500ns; default the catalog switch's hop)",
    ),
    routing: str = typer.Option("ecmp", "--routing", help="ecmp | spray | adaptive"),
    seed: int = typer.Option(0, "--seed", help="seed of the pattern and the ECMP hash"),
    size: str = typer.Option(None, "--size", help="bytes per flow, e.g. 64MiB (default 64MiB; not with --matrix)"),
    hosts: int = typer.Option(None, "--hosts", help="use only the first N hosts (default: all)"),
    fail_links: int = typer.Option(
        0, "--fail-links", help="fail N random fabric cables (switch-switch, both directions), drawn with --seed"
    ),
    fail_fraction: float = typer.Option(0.0, "--fail-fraction", help="fail this fraction of the fabric cables"),
    matrix: str = typer.Option(
        None,
        "--matrix",
        help="traffic-matrix file instead of PATTERN: CSV (header src,dst,bytes,start_s) or JSON Lines"
        " (.jsonl); hosts 0-based, bytes > 0, start_s >= 0 seconds; an optional class column (0-7) gives"
        " each flow's traffic class at --fidelity packet",
    ),
    fidelity: str = typer.Option("flow", "--fidelity", help="flow (max-min) | packet (queues, PFC, ECN, CC)"),
    cc: str = typer.Option("none", "--cc", help="packet: sender congestion control none | dcqcn | hpcc | nscc"),
    lossless: str = typer.Option("pfc", "--lossless", help="packet: pfc | credit (InfiniBand) | none (drops)"),
    spray: bool = typer.Option(False, "--spray", help="packet: spray packets over equal-cost paths"),
    transport: str = typer.Option(
        None, "--transport", help="packet: roce | ib | uet, setting --cc, --lossless, --spray and parameters"
    ),
    ber: str = typer.Option(None, "--ber", help="packet: post-FEC bit-error rate of every link, e.g. 1e-12 "
                              "(per link class: --cc-param ber_edge=... / ber_fabric=...)"),
    cc_param: list[str] = typer.Option(
        [], "--cc-param", help="packet: NAME=VALUE override, repeatable (e.g. timer_s=1.2e-3, kmin_bytes=5e3); "
        "traffic classes: classes=N, class_sched=strict|wrr, class_weights=3,1, class_lossless=1,0, "
        "class_queue_bytes=0,65536 (per class, comma-separated); a flow's class from the --matrix class column",
    ),
    buffer: str = typer.Option(None, "--buffer", help="packet: shared buffer per switch (default 16MB x Gb/s / 50)"),
    load: float = typer.Option(0.3, "--load", help="packet, websearch|fb-hadoop: offered load per host (0-1]"),
    duration: float = typer.Option(1e-3, "--duration", help="packet, websearch|fb-hadoop: arrival window (s)"),
    trace: str = typer.Option(None, "--trace", help="packet: write a Perfetto trace of flow rates and queues"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Per-host throughput, completion time and peak link load of a traffic pattern or a traffic-matrix
    file (max-min flows); with --fail-links/--fail-fraction, after failing fabric cables (at either
    fidelity), next to the healthy figures.
    With --fidelity packet: MTU packets through switch queues (PFC or credits, ECN, DCQCN/HPCC),
    adding FCT percentiles, slowdown, pause time and frames, ECN marking, queue sizes and drops."""
    from fabricsim import api

    kind = parse_choice("fidelity", fidelity, TrafficFidelity)
    if matrix is not None and size is not None:
        raise FabricsimError("size", "a matrix file gives every flow's bytes", "drop --size or --matrix")
    size = DEFAULT_SIZE if size is None else size
    if kind == TrafficFidelity.PACKET:
        from fabricsim.api.transports import PacketOptions, with_transport

        chosen = with_transport(PacketOptions(cc, lossless, spray, tuple(cc_param)),
                                PacketOptions("none", "pfc", False, ()), transport, ber)  # fmt: skip
        cc, lossless, spray, cc_param = chosen.cc, chosen.lossless, chosen.spray, list(chosen.cc_params)
        _packet(pattern, topology, routing, seed, size, hosts, (cc, lossless, spray, tuple(cc_param), buffer),
                (load, duration, trace, (fail_links, fail_fraction, matrix), as_json))  # fmt: skip
        return
    if trace is not None or cc_param or buffer is not None or spray or transport is not None or ber is not None:
        raise FabricsimError(
            "fidelity", "--trace, --cc-param, --buffer, --spray, --transport and --ber need --fidelity packet"
        )
    with progress_bar("traffic (flows done)", not as_json) as on_progress:
        result = api.traffic(
            pattern,
            topology=topology,
            routing=routing,
            seed=seed,
            size=size,
            hosts=hosts,
            fail_links=fail_links,
            fail_fraction=fail_fraction,
            matrix=matrix,
            on_progress=on_progress,
        )
    emit(result.to_json(), as_json, "traffic_table")


def _packet(pattern, topology, routing, seed, size, hosts, transport, run_opts) -> None:
    """The packet-fidelity branch: build the spec, run, print, write the trace if asked."""
    from fabricsim import api
    from fabricsim.io.packet_trace import write_packet_trace
    from fabricsim.io.results import check_output_path

    cc, lossless, spray, cc_params, buffer = transport
    load, duration, trace, (fail_links, fail_fraction, matrix), as_json = run_opts
    if trace is not None:
        check_output_path(trace, "trace")  # before the run, not after it
    spec = api.PacketTrafficSpec(
        pattern=pattern,
        topology=topology,
        routing=routing,
        seed=seed,
        size=size,
        hosts=hosts,
        cc=cc,
        lossless=lossless,
        spray=spray,
        cc_params=cc_params,
        buffer=buffer,
        load=load,
        duration_s=duration,
        series=trace is not None,
        fail_links=fail_links,
        fail_fraction=fail_fraction,
        matrix=matrix,
    )
    with working(PACKET_LABEL):
        out = api.packet_traffic(spec)
    if trace is not None:
        write_packet_trace(trace, out.run, out.link_names)
    emit(out.result.to_json(), as_json, "traffic_table")
