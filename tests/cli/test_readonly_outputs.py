"""An existing read-only file (no write bit for anyone) given as an output is refused, never
replaced by the atomic rename (issue 27). The tests run as root, whom ``os.access`` always lets
write, so the refusal must come from the mode bits."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.textfile import check_output_path, write_atomic

KEEP = "keep me\n"


def _read_only(path: Path) -> Path:
    path.write_text(KEEP)
    path.chmod(0o444)
    return path


def _unchanged(path: Path) -> None:
    assert path.read_text() == KEEP
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444


def test_check_output_path_refuses_a_read_only_file(tmp_path):
    target = _read_only(tmp_path / "out.json")
    with pytest.raises(FabricsimError, match="read-only") as info:
        check_output_path(target, "trace")
    assert info.value.field == "trace"
    with pytest.raises(FabricsimError, match="read-only"):
        write_atomic(target, "new", "trace")
    _unchanged(target)


def test_a_file_with_any_write_bit_is_still_replaced(tmp_path):
    target = tmp_path / "out.json"
    target.write_text(KEEP)
    target.chmod(0o644)
    write_atomic(target, "new", "trace")
    assert target.read_text() == "new"


def _sweep_spec(tmp_path: Path) -> str:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: ro\ntasks:\n  - kind: collective\n    grid: {op: [all-reduce], system: [dgx-h100], "
                    "gpus: [8], size: [1MiB]}\n")
    return str(spec)


def _collective_result(tmp_path: Path) -> str:
    result = tmp_path / "c.json"
    result.write_text(json.dumps({"op": "all-reduce", "time_s": 1.0, "algbw_GBps": 4.0, "busbw_GBps": 5.0}))
    return str(result)


CASES = {
    "--html": lambda tmp, out: ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1MiB",
                                "--html", out],
    "--trace": lambda tmp, out: ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8",
                                 "--global-batch", "8", "--seq-len", "512", "--fidelity", "simulate", "--trace", out],
    "--out": lambda tmp, out: ["report", _collective_result(tmp), "--out", out],
    "--export": lambda tmp, out: ["sweep", _sweep_spec(tmp), "--db", str(tmp / "r.sqlite"), "--export", out],
}


@pytest.mark.parametrize("flag", sorted(CASES))
def test_read_only_output_is_refused_by_every_command(flag, tmp_path, capsys):
    target = _read_only(tmp_path / ("out.csv" if flag == "--export" else "out.json"))
    assert main(CASES[flag](tmp_path, str(target))) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "read-only" in err, err
    _unchanged(target)
