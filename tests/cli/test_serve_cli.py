"""``fabricsim serve``: JSON contract, determinism, traces, knee, bad input => exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabricsim.cli.app import main

BASE = ["serve", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8", "--dtype", "fp8",
        "--requests", "300", "--input-len", "uniform:100,1000", "--output-len", "lognormal:128,0.5"]


def serve_json(capsys, *extra):
    assert main([*BASE, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_and_determinism(capsys):
    first = serve_json(capsys, "--arrival-rate", "4", "--seed", "7")
    assert {"requests", "output_tokens_per_s", "ttft_s", "tpot_s", "e2e_s", "slo_attainment"} <= set(first)
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert set(first[key]) == {"p50", "p90", "p99"}
        assert first[key]["p99"] >= first[key]["p50"]
    assert first["requests"] == 300
    assert serve_json(capsys, "--arrival-rate", "4", "--seed", "7") == first


def test_knee_llama3_70b(capsys):
    low = serve_json(capsys, "--arrival-rate", "2")
    high = serve_json(capsys, "--arrival-rate", "200")
    higher = serve_json(capsys, "--arrival-rate", "2000")
    assert high["ttft_s"]["p99"] > 10 * low["ttft_s"]["p99"]
    assert higher["output_tokens_per_s"] < 1.25 * high["output_tokens_per_s"]  # saturated


def test_reserve_admission_never_preempts(capsys):
    data = serve_json(capsys, "--arrival-rate", "50", "--admission", "reserve", "--max-batch", "4096")
    assert data["preemptions"] == 0 and data["completed"] == 300


def test_disaggregated_and_table(capsys):
    assert main([*BASE, "--gpus", "16", "--arrival-rate", "8", "--disaggregate", "1:1"]) == 0
    assert "TTFT" in capsys.readouterr().out


def test_trace_file(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_len,output_len\n0,100,10\n0.5,200,20\n")
    argv = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "1", "--request-trace", str(trace)]
    argv.append("--json")
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["completed"] == 2


@pytest.mark.parametrize(
    "extra",
    [
        ["--arrival-rate", "0"],
        [],
        ["--arrival-rate", "1", "--input-len", "uniform:9,1"],
        ["--arrival-rate", "1", "--input-len", "8000", "--output-len", "500"],
        ["--arrival-rate", "1", "--disaggregate", "1:1"],
        ["--arrival-rate", "1", "--disaggregate", "x"],
        ["--arrival-rate", "1", "--model", "gpt-5"],
        ["--arrival-rate", "1", "--admission", "lottery"],
    ],
)
def test_bad_input_exit_2(capsys, extra):
    rc = main([*BASE, *extra])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "", captured
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ")


def test_bad_trace_row_names_line(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_s": 0, "input_len": 10, "output_len": 2}\n{"arrival_s": "soon"}\n')
    rc = main(["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "1", "--request-trace", str(trace)])
    err = capsys.readouterr().err
    assert rc == 2 and "line 2" in err and err.count("\n") == 1


def test_console_script_exit_2():
    exe = str(Path(sys.executable).with_name("fabricsim"))  # the venv's script, not whatever is on PATH
    proc = subprocess.run([exe, *BASE, "--arrival-rate", "-3"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_knee_kimi_k2_attention_dp_expert_parallel(capsys):
    base = ["serve", "--model", "kimi-k2", "--system", "dgx-h200", "--gpus", "16", "--ep", "16", "--dtype", "fp8",
            "--requests", "400", "--input-len", "uniform:100,1000", "--output-len", "lognormal:128,0.5", "--json"]
    results = []
    for rate in ("5", "500", "5000"):
        assert main([*base, "--arrival-rate", rate]) == 0
        results.append(json.loads(capsys.readouterr().out))
    low, high, higher = results
    assert low["layout"]["attention_dp"] == 16
    assert high["ttft_s"]["p99"] > 10 * low["ttft_s"]["p99"]
    assert higher["output_tokens_per_s"] < 1.25 * high["output_tokens_per_s"]
    assert all(r["ttft_s"]["p99"] >= r["ttft_s"]["p50"] for r in results)


UNFIT = ["serve", "--model", "llama3-405b", "--system", "dgx-h100", "--gpus", "1", "--arrival-rate", "1",
         "--requests", "10", "--input-len", "100", "--output-len", "10", "--seed", "1"]


def test_model_that_does_not_fit_is_a_result_not_an_error(capsys):
    assert main([*UNFIT, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is False and data["completed"] == 0 and data["requests"] == 10
    assert data["memory_per_gpu_bytes"] > data["memory_capacity_bytes"] == 80e9
    assert data["kv_capacity_tokens"] == 0 and data["longest_request_tokens"] == 110
    assert data["output_tokens_per_s"] == 0.0
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert data[key] == {"p50": None, "p90": None, "p99": None}
    assert main(UNFIT) == 0
    table = " ".join(capsys.readouterr().out.split())
    assert "NO: needs 761.4 GiB per GPU, has 74.5 GiB" in table  # the fit wording of every table


def test_fitting_result_reports_memory_and_disaggregated_pools(capsys):
    data = serve_json(capsys, "--gpus", "16", "--arrival-rate", "8", "--disaggregate", "1:1")
    assert data["fits"] is True and data["memory_per_gpu_bytes"] < data["memory_capacity_bytes"]
    assert set(data["pools"]) == {"prefill", "decode"} and all(p["fits"] for p in data["pools"].values())
    assert data["pools"]["decode"]["longest_request_tokens"] == data["longest_request_tokens"]
    unfit = ["--model", "llama3-405b", "--gpus", "2", "--tp", "1", "--dtype", "bf16", "--disaggregate", "1:1"]
    assert main([*UNFIT, *unfit, "--json"]) == 0
    pools = json.loads(capsys.readouterr().out)["pools"]
    assert not pools["prefill"]["fits"] and not pools["decode"]["fits"]


def test_console_script_unfit_exit_0():
    exe = str(Path(sys.executable).with_name("fabricsim"))  # the venv's script, not whatever is on PATH
    proc = subprocess.run([exe, *UNFIT, "--json"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stderr == "" and json.loads(proc.stdout)["fits"] is False


def test_no_cuda_graphs_slows_decode(capsys):
    argv = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "2", "--tp", "1",
            "--arrival-rate", "20", "--requests", "200", "--json"]
    assert main(argv) == 0
    graphs = json.loads(capsys.readouterr().out)
    assert main([*argv, "--no-cuda-graphs"]) == 0
    eager = json.loads(capsys.readouterr().out)
    assert eager["tpot_s"]["p50"] > graphs["tpot_s"]["p50"] * 1.05
