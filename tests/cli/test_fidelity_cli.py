"""``fabricsim train --fidelity ... --trace ... --seeds ...``: JSON contract, trace file, errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabricsim.cli.app import main

BASE = ["train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "64", "--global-batch", "16"]
BASE += ["--seq-len", "2048", "--tp", "8", "--pp", "8", "--json"]


def _run(capsys, *extra: str) -> dict:
    assert main([*BASE, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_keeps_the_train_contract_and_says_which_path_ran(capsys):
    analytic = _run(capsys)
    simulated = _run(capsys, "--fidelity", "simulate")
    assert analytic["fidelity"] == "analytic" and simulated["fidelity"] == "simulate"
    assert set(analytic) <= set(simulated)
    assert simulated["step_time_s"] == pytest.approx(analytic["step_time_s"], rel=0.03)
    assert sum(simulated["time_breakdown_s"].values()) == pytest.approx(simulated["step_time_s"])
    assert simulated["folded"]["pipeline_stages_simulated"] == 8
    assert "step_time_s_p99" not in simulated


def test_variability_adds_ordered_percentiles(capsys):
    out = _run(capsys, "--fidelity", "simulate", "--straggler", "0.05:0.2", "--jitter", "0.02", "--seeds", "8")
    assert out["step_time_s_p99"] >= out["step_time_s_p50"] >= out["step_time_s"]
    assert out["seeds"] == 8


def test_flow_fidelity_runs_on_the_topology(capsys):
    out = _run(capsys, "--fidelity", "flow")
    assert out["fidelity"] == "flow" and out["step_time_s"] > 0


def test_trace_is_written_and_loads(capsys, tmp_path):
    path = tmp_path / "step.json"
    _run(capsys, "--fidelity", "simulate", "--trace", str(path))
    doc = json.loads(path.read_text())
    assert any(e["ph"] == "X" for e in doc["traceEvents"])


@pytest.mark.parametrize(
    "extra",
    [
        ["--fidelity", "pakcet"],
        ["--placement", "spread"],
        ["--straggler", "half"],
        ["--jitter", "-1"],
        ["--fidelity", "simulate", "--ecmp-rehash"],
        ["--seeds", "0"],
    ],
)
def test_bad_simulation_options_are_one_line_errors(capsys, extra, tmp_path):
    trace = tmp_path / "never.json"
    assert main([*BASE, *extra, "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1
    assert not trace.exists() and list(tmp_path.iterdir()) == []


def test_console_script_exits_2_with_one_line():
    script = Path(sys.executable).with_name("fabricsim")
    cmd = [str(script), *BASE, "--fidelity", "bogus"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "fidelity" in proc.stderr


INFER = ["infer", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8", "--batch", "32"]
INFER += ["--input-len", "512", "--output-len", "64", "--json"]


def test_infer_simulate_adds_ttft_and_tpot_percentiles(capsys, tmp_path):
    assert main(INFER) == 0
    analytic = json.loads(capsys.readouterr().out)
    trace = tmp_path / "infer.json"
    extra = ["--fidelity", "simulate", "--jitter", "0.05", "--seeds", "5", "--trace", str(trace)]
    assert main([*INFER, *extra]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fidelity"] == "simulate" and set(analytic) <= set(out)
    assert out["tpot_s"] == pytest.approx(analytic["tpot_s"], rel=1e-6)
    assert out["ttft_s"] == pytest.approx(analytic["ttft_s"], rel=1e-6)
    assert out["tpot_s_p99"] >= out["tpot_s_p50"] >= out["tpot_s"]
    assert out["ttft_s_p99"] >= out["ttft_s_p50"] >= out["ttft_s"]
    names = {e["name"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"}
    assert any(n.startswith("prefill chunk0.mb0") for n in names)
    assert any(n.startswith("decode step0.mb0") for n in names)


def test_infer_flow_fidelity_runs(capsys):
    assert main([*INFER, "--fidelity", "flow"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fidelity"] == "flow" and out["tpot_s"] > 0 and out["ttft_s"] > 0
