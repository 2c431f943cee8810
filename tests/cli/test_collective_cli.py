"""``fabricsim collective``: table, JSON contract, algorithm choice and the real console script."""

import json
import shutil
import subprocess
import sys

import pytest

from fabricsim.cli.app import main

CONTRACT_KEYS = {"op", "gpus", "size_bytes", "algorithm", "protocol", "time_s", "algbw_GBps", "busbw_GBps"}


def run_json(capsys, *args):
    rc = main(["collective", *args, "--json"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    return json.loads(captured.out)


def test_json_contract(capsys):
    result = run_json(capsys, "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1GiB")
    assert set(result) >= CONTRACT_KEYS
    assert result["size_bytes"] == 2**30 and result["gpus"] == 8
    assert result["algbw_GBps"] == pytest.approx(2**30 / result["time_s"] / 1e9)
    assert result["busbw_GBps"] == pytest.approx(result["algbw_GBps"] * 1.75)
    assert result["algorithm"] == "nvls" and result["protocol"] == "Simple"


def test_json_is_deterministic(capsys):
    args = ("all-gather", "--system", "dgx-a100", "--gpus", "64", "--size", "512MB")
    main(["collective", *args, "--json"])
    one = capsys.readouterr().out
    main(["collective", *args, "--json"])
    assert capsys.readouterr().out == one


def test_forced_algorithm(capsys):
    result = run_json(capsys, "all-reduce", "--system", "dgx-h100", "--gpus", "16", "--size", "1GiB",
                      "--algorithm", "hierarchical")
    assert result["algorithm"] == "hierarchical"


def test_table_output(capsys):
    rc = main(["collective", "broadcast", "--system", "gb200-nvl72", "--gpus", "72", "--size", "64MiB"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "busbw" in out and "algbw" in out and "GB/s" in out


def test_single_gpu(capsys):
    result = run_json(capsys, "all-reduce", "--system", "dgx-h100", "--gpus", "1", "--size", "1MiB")
    assert result["time_s"] > 0 and result["busbw_GBps"] == 0.0


def test_unrunnable_algorithm_is_one_line(capsys):
    rc = main(["collective", "all-to-all", "--system", "dgx-h100", "--gpus", "8", "--size", "1MiB",
               "--algorithm", "tree"])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and "algorithm" in captured.err and "direct" in captured.err


@pytest.mark.skipif(shutil.which("fabricsim") is None, reason="console script not installed")
def test_console_script_bad_input_exits_2():
    proc = subprocess.run(
        ["fabricsim", "collective", "all-reduce", "--system", "dgx-h1000", "--gpus", "8", "--size", "1GiB"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "dgx-h100" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_module_entry_point_runs():
    proc = subprocess.run(
        [sys.executable, "-m", "fabricsim.cli.app", "collective", "send-recv", "--system", "dgx-a100", "--gpus", "2",
         "--size", "1GiB", "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["algorithm"] == "direct"
