"""``fabricsim train``: table, JSON contract, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

from fabricsim.cli.app import main

BASE = [
    "train",
    "--model",
    "gpt3-175b",
    "--system",
    "dgx-a100",
    "--gpus",
    "1024",
    "--global-batch",
    "1536",
    "--seq-len",
    "2048",
]
CONTRACT = {
    "step_time_s",
    "tokens_per_s",
    "model_tflops_per_gpu",
    "hardware_tflops_per_gpu",
    "mfu",
    "hfu",
    "fits",
    "memory_per_gpu_bytes",
    "memory_capacity_bytes",
    "memory_breakdown_bytes",
    "time_breakdown_s",
    "layout",
    "fidelity",
}


def test_json_contract(capsys) -> None:
    rc = main([*BASE, "--tp", "8", "--pp", "16", "--recompute", "full", "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= CONTRACT
    assert payload["layout"]["dp"] == 8 and payload["layout"]["recompute"] == "full"
    assert abs(sum(payload["time_breakdown_s"].values()) - payload["step_time_s"]) < 1e-9 * payload["step_time_s"]
    assert payload["fidelity"] == "analytic"


def test_table(capsys) -> None:
    rc = main([*BASE, "--tp", "8", "--pp", "16", "--vpp", "2", "--zero", "1", "--no-sequence-parallel"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "pipeline_bubble" in out and "optimizer_states" in out and "MFU" in out


def test_bad_layout_is_one_line(capsys) -> None:
    rc = main([*BASE, "--tp", "8", "--pp", "16", "--dp", "4"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "layout" in err


def test_console_script_exit_code_2() -> None:
    cmd = [str(Path(sys.executable).parent / "fabricsim"), *BASE, "--tp", "6"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")
