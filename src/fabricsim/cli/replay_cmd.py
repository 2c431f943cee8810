"""``fabricsim replay TRACE.et...``: replay a Chakra execution trace (one file per rank) in the event engine."""

from __future__ import annotations

import typer

from fabricsim.cli.common import JSON_OPTION, emit


def replay(
    traces: list[str] = typer.Argument(..., help="Chakra .et files, one per rank (<prefix>.<rank>.et)"),
    system: str | None = typer.Option(None, "--system", help="time ops without duration_micros on this system"),
    trace_out: str | None = typer.Option(None, "--trace", help="write a Chrome/Perfetto trace JSON of the replay"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Step time and communication overlap of a captured training iteration."""
    from fabricsim import api
    from fabricsim.io.chakra import read_chakra_files
    from fabricsim.io.results import check_output_path
    from fabricsim.io.trace import write_trace
    from fabricsim.report.replay_tables import replay_table

    if trace_out is not None:
        check_output_path(trace_out, "trace")  # before reading and replaying, so a bad --trace costs nothing
    result = api.replay_chakra(read_chakra_files(traces), system=system)
    if trace_out is not None:
        write_trace(trace_out, result.graph, result.simulation.timeline, result.simulation.comm)
    emit(result.to_json(), as_json, replay_table)
