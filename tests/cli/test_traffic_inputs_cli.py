"""``traffic --matrix FILE`` at flow and packet fidelity, and ``--fail-links`` at packet fidelity (issue 26)."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main

TOPO = "fat-tree:k=4,gbps=100,latency=1us"
LINE_BPS = 100e9 / 8


def _json(capsys, argv):
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("fidelity", ["flow", "packet"])
@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_matrix_file_runs_its_flows_at_their_start_times(capsys, tmp_path, fidelity, suffix):
    rows = [(0, 1, 1e6, 0.0), (2, 1, 1e6, 50e-6), (5, 12, 250e3, 10e-6)]
    path = tmp_path / f"m{suffix}"
    if suffix == ".csv":
        path.write_text("src,dst,bytes,start_s\n" + "".join(f"{s},{d},{b},{t}\n" for s, d, b, t in rows))
    else:
        keys = ("src", "dst", "bytes", "start_s")
        path.write_text("".join(json.dumps(dict(zip(keys, row, strict=True))) + "\n" for row in rows))
    out = _json(capsys, ["traffic", "--topology", TOPO, "--matrix", str(path), "--fidelity", fidelity, "--json"])
    assert out["pattern"] == "matrix" and out["flows"] == 3 and out["fidelity"] == fidelity
    # the last flow starts at 50 us; alone after the first one's end, it needs at least size / line rate
    assert out["completion_time_s"] >= 50e-6 + 1e6 / LINE_BPS
    if fidelity == "packet":
        assert out["delivered_bytes"] == out["offered_bytes"] == 2.25e6


@pytest.mark.parametrize("fidelity", ["flow", "packet"])
def test_a_bad_matrix_row_is_one_line_naming_the_line(capsys, tmp_path, fidelity):
    path = tmp_path / "m.csv"
    path.write_text("src,dst,bytes,start_s\n0,1,1e6,0\n0,16,1e6,0\n")
    assert main(["traffic", "--topology", TOPO, "--matrix", str(path), "--fidelity", fidelity]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: matrix: line 3: dst 16 is not a host in 0..15")


def test_a_pattern_or_a_matrix_not_both_nor_neither(capsys, tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("src,dst,bytes,start_s\n0,1,1e6,0\n")
    assert main(["traffic", "incast", "--topology", TOPO, "--matrix", str(path)]) == 2
    assert "matrix: a matrix file replaces PATTERN" in capsys.readouterr().err
    assert main(["traffic", "--topology", TOPO]) == 2
    assert "pattern: is missing" in capsys.readouterr().err
    assert main(["traffic", "--topology", TOPO, "--matrix", str(path), "--size", "1MB"]) == 2  # not ignored
    assert "size: a matrix file gives every flow's bytes" in capsys.readouterr().err


def test_fail_links_at_packet_fidelity_fails_the_cables_the_flow_fidelity_fails(capsys):
    # issue 26: --fail-links was refused at packet fidelity
    argv = ["traffic", "permutation", "--topology", TOPO, "--size", "1MB", "--seed", "3", "--fail-links", "4", "--json"]
    packet = _json(capsys, [*argv, "--fidelity", "packet"])
    flow = _json(capsys, argv)
    assert packet["failed_links"] == flow["failed_links"] == 4
    assert packet["healthy"] is not None and packet["drops"] == 0
    assert packet["delivered_bytes"] == packet["offered_bytes"]
    # fewer cables cannot make the permutation finish sooner than on the whole fabric
    assert packet["completion_time_s"] >= packet["healthy"]["completion_time_s"]
    assert packet["completion_time_s"] == pytest.approx(flow["completion_time_s"], rel=0.1)
    healthy = _json(capsys, [*argv[:-3], "--json", "--fidelity", "packet"])
    assert healthy["completion_time_s"] == packet["healthy"]["completion_time_s"] and healthy["healthy"] is None


def test_failing_every_uplink_of_a_switch_is_refused_at_packet_fidelity(capsys):
    argv = ["traffic", "permutation", "--topology", TOPO, "--fidelity", "packet", "--fail-fraction", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: fail-links:") and "no path left" in err
