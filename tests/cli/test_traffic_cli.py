"""``fabricsim traffic``: JSON contract, table, determinism and one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from fabricsim import api
from fabricsim.cli.app import main

KEYS = {"hosts", "flows", "throughput_fraction", "completion_time_s", "max_link_utilization"}


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_permutation_json_contract_and_determinism(capsys):
    argv = ["traffic", "permutation", "--topology", "fat-tree:k=8", "--routing", "ecmp", "--seed", "3", "--json"]
    first = _json(capsys, argv)
    assert set(first) >= KEYS
    assert set(first["throughput_fraction"]) == {"mean", "p1", "min"}
    assert first["hosts"] == 128 and first["flows"] == 128
    assert 0.38 <= first["throughput_fraction"]["mean"] <= 0.52
    assert first["max_link_utilization"] <= 1 + 1e-9
    assert main(argv) == 0
    assert capsys.readouterr().out == json.dumps(first, sort_keys=True, indent=2) + "\n"


@pytest.mark.parametrize(
    ("pattern", "topology", "routing"),
    [
        ("all-to-all", "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4,oversubscription=2", "spray"),
        ("incast", "dragonfly:a=2,p=2,h=1", "adaptive"),
        ("ring", "torus:dims=4x4", "ecmp"),
    ],
)
def test_patterns_and_table(capsys, pattern, topology, routing):
    payload = _json(capsys, ["traffic", pattern, "--topology", topology, "--routing", routing, "--json"])
    assert 0 < payload["throughput_fraction"]["min"] <= payload["throughput_fraction"]["mean"] <= 1 + 1e-9
    assert main(["traffic", pattern, "--topology", topology, "--routing", routing]) == 0
    assert "throughput / line rate" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["traffic", "ring", "--topology", "fat-tree:k=4", "--hosts", "17"], "hosts"),
        (["traffic", "ring", "--topology", "fat-tree:k=4", "--routing", "valiant"], "routing"),
        (["traffic", "ring", "--topology", "fat-tree:k=5"], "topology: fat-tree k:"),
        (["traffic", "broadcast", "--topology", "fat-tree:k=4"], "pattern"),
        (["traffic", "ring", "--topology", "leaf-spine:leaves=2,spines=0,hosts_per_leaf=2"],
         "topology: leaf-spine spines:"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, field):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {field}")


def test_console_script_exit_code():
    exe = shutil.which("fabricsim")
    assert exe, "fabricsim console script not installed"
    proc = subprocess.run([exe, "traffic", "ring", "--topology", "fat-tree:k=3"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "k" in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("count", [1, 8, 32])
def test_failed_cables_never_raise_sprayed_throughput_above_healthy(seed, count):
    result = api.traffic(
        "permutation", topology="fat-tree:k=8", routing="spray", seed=seed, size="1MiB", fail_links=count
    )
    assert result.failed_links == count
    assert result.throughput_mean <= result.healthy_throughput_mean * (1 + 1e-9)
    assert result.completion_time_s >= result.healthy_completion_time_s * (1 - 1e-9)


def test_fail_links_json_is_deterministic_by_seed(capsys):
    argv = ["traffic", "permutation", "--topology", "fat-tree:k=8", "--routing", "spray", "--fail-links", "24"]
    first = _json(capsys, [*argv, "--seed", "1", "--json"])
    assert first["failed_links"] == 24 and set(first["healthy"]) == {"throughput_fraction_mean", "completion_time_s"}
    assert first["throughput_fraction"]["mean"] < first["healthy"]["throughput_fraction_mean"]
    assert _json(capsys, [*argv, "--seed", "1", "--json"]) == first
    assert _json(capsys, [*argv, "--seed", "2", "--json"]) != first
    fraction = _json(capsys, [*argv[:-2], "--fail-fraction", "0.25", "--seed", "1", "--json"])
    assert fraction["failed_links"] == 64  # a quarter of the 256 fabric cables
    healthy = _json(capsys, [*argv[:-2], "--seed", "1", "--json"])
    assert healthy["failed_links"] == 0 and healthy["healthy"] is None
    assert main([*argv, "--seed", "1"]) == 0
    assert "failed cables" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--fail-links", "999"], "fail-links"),
        (["--fail-links", "250"], "fail-links"),  # leaves flows without a path
        (["--fail-links", "2", "--fail-fraction", "0.1"], "fail-links"),
        (["--fail-fraction", "1.5"], "fail-fraction"),
    ],
)
def test_bad_failures_are_one_line_exit_2(capsys, extra, field):
    assert main(["traffic", "permutation", "--topology", "fat-tree:k=8", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {field}")


def test_console_script_unroutable_failures_exit_2():
    exe = shutil.which("fabricsim")
    assert exe, "fabricsim console script not installed"
    argv = [exe, "traffic", "permutation", "--topology", "fat-tree:k=4", "--fail-links", "30"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stderr.count("\n") == 1 and "--fail-links" in proc.stderr and proc.stdout == "", (
        proc.stderr[-2000:], proc.stdout[-500:])
