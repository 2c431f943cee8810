"""``fabricsim calibrate nccl-tests LOG...``: fit a system to nccl-tests logs and write its YAML."""

from __future__ import annotations

from pathlib import Path

import typer

from fabricsim.cli.common import JSON_OPTION, SYSTEM_OPTION, emit

app = typer.Typer(help="Fit a system's figures to measurements from your own cluster.", no_args_is_help=True)

MAX_LOG_BYTES = 64 * 2**20  # a sweep log is a few kB; refuse anything that cannot be one


def _read_log(path: str) -> str:
    from pathlib import Path

    from fabricsim.errors import FabricsimError

    file = Path(path)
    try:
        if not file.is_file():
            raise FabricsimError("log", f"{path} is not a file", "give nccl-tests output files")
        if file.stat().st_size > MAX_LOG_BYTES:
            raise FabricsimError("log", f"{path} is larger than {MAX_LOG_BYTES >> 20} MiB", "give one sweep's output")
        return file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise FabricsimError("log", f"cannot read {path}: {exc.strerror}", "check the path") from None


@app.command("nccl-tests", no_args_is_help=True)
def nccl_tests(
    logs: list[str] = typer.Argument(..., help="nccl-tests / rccl-tests output files (one sweep each)"),
    system: str = SYSTEM_OPTION,
    out: str = typer.Option(..., "--out", help="calibrated system YAML to write (its name is the file's stem)"),
    op: str | None = typer.Option(None, "--op", help="the op of every log, when the log does not name its *_perf"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Fit measured alpha-beta lines and tier bandwidths; write a system YAML; print residuals."""
    import yaml

    from fabricsim import api
    from fabricsim.io.nccl_tests import parse_nccl_tests
    from fabricsim.io.output import write_output
    from fabricsim.io.results import check_output_path
    from fabricsim.report.calibration_tables import calibration_tables

    check_output_path(out, "out")  # before the fit, so a bad --out costs nothing
    op_name = None if op is None else api.collective_op(op)
    runs = [parse_nccl_tests(_read_log(path), path, op_name) for path in logs]
    result = api.calibrate_nccl_tests(runs, system=system, name=Path(out).stem)  # the system is named after its file
    text = "# written by fabricsim calibrate nccl-tests; every fitted number says its log\n"
    write_output(out, text + yaml.safe_dump(result.document, sort_keys=False, width=120), "out")
    emit(result.to_json(), as_json, calibration_tables)
