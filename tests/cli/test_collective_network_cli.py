"""``fabricsim collective --fidelity flow|packet``: JSON keys, determinism, the analytic default
unchanged, trace file, packet options refused elsewhere, one-line errors (exit 2, no traceback)."""

from __future__ import annotations

import json

import pytest

from fabricsim import api
from fabricsim.cli.app import main
from fabricsim.io.results import dumps

TOPO = "leaf-spine:leaves=2,spines=4,hosts_per_leaf=4,gbps=400"
BASE = ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "8MiB"]
PACKET = [*BASE, "--fidelity", "packet", "--topology", TOPO]
KEYS = {"time_s", "algbw_GBps", "busbw_GBps", "algorithm", "algorithm_choice", "fidelity", "topology", "events"}
PACKET_KEYS = KEYS | {"pause_s", "pause_frames", "ecn_marked_fraction", "queue_bytes", "drops", "flow_time_s",
                      "packet_over_flow", "cc", "lossless"}  # fmt: skip


def _json(capsys, argv):
    rc = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return captured.out


def test_analytic_default_is_unchanged(capsys):
    default = _json(capsys, BASE)
    assert _json(capsys, [*BASE, "--fidelity", "analytic"]) == default
    direct = api.collective("all-reduce", system="dgx-h100", gpus=8, size="8MiB", algorithm="auto")
    assert default == dumps(direct.to_json()) + "\n"
    assert json.loads(default)["fidelity"] == "analytic"


def test_packet_json_keys_and_determinism(capsys):
    first = _json(capsys, [*PACKET, "--cc", "dcqcn", "--cc-param", "kmin_bytes=5e3", "--buffer", "4MB"])
    out = json.loads(first)
    assert set(out) >= PACKET_KEYS
    assert out["fidelity"] == "packet" and out["algorithm"] == "ring" and out["algorithm_choice"] == "auto"
    assert out["cc"] == "dcqcn" and out["drops"] == 0
    assert out["packet_over_flow"] == pytest.approx(out["time_s"] / out["flow_time_s"])
    assert all(set(v) == {"p99", "max"} for v in out["queue_bytes"].values())
    again = _json(capsys, [*PACKET, "--cc", "dcqcn", "--cc-param", "kmin_bytes=5e3", "--buffer", "4MB"])
    assert again == first


def test_flow_fidelity_on_the_systems_fabric(capsys):
    out = json.loads(_json(capsys, ["collective", "all-gather", "--system", "dgx-h100", "--gpus", "16", "--size",
                                    "64MiB", "--fidelity", "flow"]))  # fmt: skip
    assert set(out) >= KEYS and out["topology"] == "dgx-h100:gpus=16" and "pause_s" not in out
    assert out["steps"] == 15 and out["simulated_steps"] == 1


def test_packet_trace_has_every_step(capsys, tmp_path):
    trace = tmp_path / "c.json"
    out = json.loads(_json(capsys, [*PACKET, "--algorithm", "halving-doubling", "--trace", str(trace)]))
    events = json.loads(trace.read_text())["traceEvents"]
    steps = [e for e in events if e["ph"] == "X"]
    assert len(steps) == out["steps"] == 6
    assert sum(e["dur"] for e in steps) == pytest.approx(out["time_s"] * 1e6)
    assert any(e["ph"] == "C" and "rate_Gbps" in e["args"] for e in events)


def test_table_shows_the_flow_time_next_to_packet(capsys):
    assert main(PACKET) == 0
    out = capsys.readouterr().out
    assert "packet / flow" in out and "PFC pause" in out and "ring (auto)" in out


@pytest.mark.parametrize(
    "extra",
    [["--topology", TOPO], ["--routing", "spray"], ["--seed", "3"], ["--cc", "dcqcn"], ["--spray"],
     ["--trace", "t.json"], ["--buffer", "4MB"], ["--cc-param", "pmax=0.1"], ["--lossless", "credit"]],
)  # fmt: skip
def test_network_options_are_refused_with_the_analytic_fidelity(capsys, extra):
    assert main([*BASE, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--fidelity" in err and extra[0] in err


@pytest.mark.parametrize(
    "extra", [["--cc", "dcqcn"], ["--spray"], ["--trace", "t.json"], ["--buffer", "4MB"], ["--lossless", "none"]]
)
def test_packet_options_are_refused_with_the_flow_fidelity(capsys, extra, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*BASE, "--fidelity", "flow", "--topology", TOPO, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--fidelity packet" in err
    assert not (tmp_path / "t.json").exists()


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--fidelity", "fluid"], "fidelity"),
        (["--fidelity", "packet", "--gpus", "600"], "gpus"),
        (["--fidelity", "packet", "--topology", TOPO, "--gpus", "9"], "gpus"),
        (["--fidelity", "flow", "--gpus", "1"], "gpus"),
        (["--fidelity", "flow", "--topology", "fat-tree:k=3"], "k"),
        (["--fidelity", "flow", "--topology", "ring-world"], "topology"),
        (["--fidelity", "packet", "--topology", TOPO, "--cc", "tcp"], "cc"),
        (["--fidelity", "packet", "--topology", TOPO, "--cc-param", "nope=1"], "cc-param"),
        (["--fidelity", "packet", "--topology", TOPO, "--buffer", "10KB"], "buffer"),
        (["--fidelity", "packet", "--topology", TOPO, "--lossless", "credit", "--buffer", "4MB"], "buffer"),
        (["--fidelity", "packet", "--topology", TOPO, "--cc-param", "mtu_bytes=1.5"], "mtu_bytes"),
        (["--fidelity", "flow", "--topology", TOPO, "--routing", "random"], "routing"),
        (["--fidelity", "packet", "--topology", TOPO, "--size", "0"], "size"),
        (["--fidelity", "packet", "--topology", TOPO, "--size", "1TiB"], "size"),
        (["--fidelity", "flow", "--topology", TOPO, "--algorithm", "nvls"], "algorithm"),
        (["--fidelity", "packet", "--topology", TOPO, "--trace", "."], "trace"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, field):
    args = list(BASE)
    if "--gpus" in argv:
        args[args.index("--gpus") + 1] = argv[argv.index("--gpus") + 1]
        argv = [a for i, a in enumerate(argv) if a != "--gpus" and (i == 0 or argv[i - 1] != "--gpus")]
    if "--size" in argv:
        args[args.index("--size") + 1] = argv[argv.index("--size") + 1]
        argv = [a for i, a in enumerate(argv) if a != "--size" and (i == 0 or argv[i - 1] != "--size")]
    assert main([*args, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert field in err
