"""``fabricsim infer``: JSON contract, table, bad input => one stderr line and exit 2."""

import json
import subprocess
import sys

import pytest

from fabricsim.cli.app import main

KEYS = {"ttft_s", "tpot_s", "e2e_latency_s", "batch", "output_tokens_per_s", "kv_cache_bytes",
        "memory_per_gpu_bytes", "fits", "layout"}
BASE = ["infer", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "8", "--input-len", "1024",
        "--output-len", "256"]


def test_json_contract(capsys):
    assert main([*BASE, "--batch", "max", "--dtype", "fp8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= KEYS
    assert data["fits"] and data["batch"] > 1 and data["layout"]["tp"] == 8 and data["layout"]["kv_dtype"] == "fp8"
    assert data["e2e_latency_s"] > data["ttft_s"] > 0


def test_table(capsys):
    assert main([*BASE, "--batch", "16"]) == 0
    assert "TPOT" in capsys.readouterr().out


def test_not_fitting_is_a_result(capsys):
    argv = ["infer", "--model", "llama3-405b", "--system", "dgx-h100", "--gpus", "1", "--batch", "1",
            "--input-len", "128", "--output-len", "128", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["fits"] is False


@pytest.mark.parametrize(
    "extra",
    [
        ["--model", "llama9"],
        ["--dtype", "int4"],
        ["--kv-dtype", "fp2"],
        ["--tp", "3"],
        ["--ep", "2"],
        ["--input-len", "9000"],
        ["--batch", "lots"],
        ["--gpus", "6"],
    ],
)
def test_bad_input_exit_2(capsys, extra):
    rc = main([*BASE, *extra])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ")


def test_console_script_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "fabricsim.cli.app", *BASE, "--model", "nope"], capture_output=True, text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "model" in proc.stderr


def test_kv_spill_flags(capsys):
    argv = [*BASE, "--batch", "max", "--dtype", "fp8", "--kv-spill", "cxl2", "--kv-spill-capacity", "64GB", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] and data["kv_spilled_bytes"] > 0
    assert main([*BASE, "--kv-spill", "usb2"]) == 2
    assert "link" in capsys.readouterr().err


def test_no_cuda_graphs_pays_the_launch_floors_in_decode_only(capsys):
    argv = [*BASE, "--batch", "16", "--tp", "8", "--json"]
    assert main(argv) == 0
    graphs = json.loads(capsys.readouterr().out)
    assert main([*argv, "--no-cuda-graphs"]) == 0
    eager = json.loads(capsys.readouterr().out)
    assert eager["ttft_s"] == graphs["ttft_s"]  # prefill runs eagerly either way
    # 80 layers x (8 x 5 us - (4 x 5 + 4 x 0.5) us) + the step's own kernels (attention: 13 us both ways)
    assert eager["tpot_s"] - graphs["tpot_s"] == pytest.approx(80 * 18e-6 + 18e-6, rel=1e-6)
