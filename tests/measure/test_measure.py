"""``measure collective``: spec checks and nccl-tests formatting (no torch needed), and the Done-when
run: gloo on 4 CPU ranks, whose output round-trips through ``calibrate nccl-tests``."""

import json

import pytest
import yaml

from fabricsim.api.measure import size_sweep
from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.io.nccl_tests import format_nccl_tests, parse_nccl_tests
from fabricsim.measure import MeasuredRow, MeasureResult, MeasureSpec


def _fake(op="all-reduce", ranks=4):
    spec = MeasureSpec(op, "gloo", ranks, (4096, 65536, 2**20), iters=3, warmup=1)
    rows = tuple(MeasuredRow(s, spec.count(s), 1e-4 + s / 2e9, 2e-4 + s / 2e9, 0) for s in spec.sizes_bytes)
    return MeasureResult(spec, rows, "host-a", "CPU (gloo)", "2.x", (11, 12, 13, 14)[:ranks])


@pytest.mark.parametrize(("op", "factor"), [("all-reduce", 1.5), ("all-gather", 0.75), ("broadcast", 1.0)])
def test_format_round_trips_through_the_parser(op, factor):
    fake = _fake(op)
    run = parse_nccl_tests(format_nccl_tests(fake), "measured.log")
    assert (run.op, run.ranks, run.nodes, run.devices) == (op, 4, 1, ("CPU (gloo)",))
    assert [r.size_bytes for r in run.rows] == list(fake.spec.sizes_bytes)
    for parsed, row in zip(run.rows, fake.rows, strict=True):
        assert parsed.count == row.count and parsed.wrong == 0
        assert parsed.time_s == pytest.approx(row.time_s, rel=1e-3)
        assert parsed.in_place_time_s == pytest.approx(row.second_time_s, rel=1e-3)
        assert parsed.busbw_Bps == pytest.approx(row.size_bytes / row.time_s * factor, rel=1e-2, abs=1e7)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"backend": "mpi"}, "backend"),
        ({"ranks": 1}, "ranks"),
        ({"op": "all-to-all"}, "op"),
        ({"sizes_bytes": (3,)}, "sizes"),
        ({"sizes_bytes": ()}, "sizes"),
        ({"iters": 0}, "iters"),
    ],
)
def test_spec_is_validated(kwargs, field):
    base = {"op": "all-reduce", "backend": "gloo", "ranks": 4, "sizes_bytes": (4096,)}
    with pytest.raises(FabricsimError) as info:
        MeasureSpec(**(base | kwargs))
    assert info.value.field == field


def test_size_sweep_is_nccl_tests_b_e_f():
    assert size_sweep("1KiB", "8KiB") == [1024, 2048, 4096, 8192]
    with pytest.raises(FabricsimError):
        size_sweep("8KiB", "1KiB")


def test_gloo_on_4_ranks_round_trips_through_calibrate(tmp_path, capsys):
    pytest.importorskip("torch", reason="torch not installed (pip install 'fabricsim[measure]')")
    log = tmp_path / "gloo.log"
    args = [
        "measure",
        "collective",
        "--backend",
        "gloo",
        "--ranks",
        "4",
        "--sizes",
        "4KiB,64KiB,1MiB",
        "--iters",
        "3",
        "--warmup",
        "1",
        "--out",
        str(log),
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed == log.read_text()
    run = parse_nccl_tests(printed, str(log))
    assert (run.op, run.ranks, run.nodes) == ("all-reduce", 4, 1)
    assert [r.size_bytes for r in run.rows] == [4096, 65536, 2**20] and all(r.wrong == 0 for r in run.rows)
    out = tmp_path / "cpu.yaml"
    assert main(["calibrate", "nccl-tests", str(log), "--system", "dgx-h100", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["residuals"]) == 3
    fit = yaml.safe_load(out.read_text())["collective_fits"][0]
    assert (fit["op"], fit["ranks"], fit["nodes"]) == ("all-reduce", 4, 1)
    assert main(["collective", "all-reduce", "--system", str(out), "--gpus", "4", "--size", "1MiB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["protocol"] == "measured"
