"""``fabricsim plan train``: JSON contract, table, one-line errors (exit 2), nothing-fits result."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabricsim.cli.app import main

BASE = ["plan", "train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "64"]
BATCH = ["--global-batch", "128", "--seq-len", "2048"]
TRAIN_KEYS = {"step_time_s", "tokens_per_s", "mfu", "fits", "memory_per_gpu_bytes", "time_breakdown_s", "layout"}


def test_json_contract(capsys) -> None:
    rc = main([*BASE, *BATCH, "--top", "3", "--tp", "4,8", "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert {"evaluated", "feasible", "elapsed_s", "plans"} <= set(payload)
    assert payload["evaluated"] >= payload["feasible"] > 0
    assert len(payload["plans"]) == 3
    for rank, plan in enumerate(payload["plans"], 1):
        assert set(plan) >= TRAIN_KEYS and plan["rank"] == rank and plan["fits"]
        assert plan["layout"]["tp"] in (4, 8)
    steps = [plan["step_time_s"] for plan in payload["plans"]]
    assert steps == sorted(steps)
    assert payload["plans"][0]["why"] == [] and payload["plans"][1]["why"]


def test_table_prints_counts_and_reasons(capsys) -> None:
    rc = main([*BASE, *BATCH, "--top", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "evaluated" in out and "layouts" in out and "ranked plans" in out and "why the others lose" in out


def test_nothing_fits_is_a_result_not_an_error(capsys) -> None:
    rc = main(["plan", "train", "--model", "megatron-1t", "--system", "dgx-a100", "--gpus", "8", *BATCH, "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert payload["feasible"] == 0 and payload["plans"] == []
    assert payload["evaluated"] > 0 and payload["smallest_memory_per_gpu_bytes"] > 80e9


def test_nothing_fits_table(capsys) -> None:
    rc = main(["plan", "train", "--model", "megatron-1t", "--system", "dgx-a100", "--gpus", "8", *BATCH])
    assert rc == 0 and "nothing fits" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["plan", "train", "--model", "gpt-9", "--system", "dgx-a100", "--gpus", "64", *BATCH], "model"),
        (["plan", "train", "--model", "gpt3-175b", "--system", "dgx-z", "--gpus", "64", *BATCH], "system"),
        ([*BASE[:-1], "12", *BATCH], "gpus"),
        ([*BASE, *BATCH, "--tp", "3"], "tp"),
        ([*BASE, *BATCH, "--tp", "8", "--pp", "16"], "layout"),
        ([*BASE, *BATCH, "--tp", "eight"], "tp"),
        ([*BASE, *BATCH, "--zero", "5"], "zero"),
        ([*BASE, *BATCH, "--recompute", "most"], "recompute"),
        ([*BASE, *BATCH, "--objective", "cheapest"], "objective"),
        ([*BASE, *BATCH, "--top", "0"], "top"),
        ([*BASE, "--global-batch", "0", "--seq-len", "2048"], "global-batch"),
        ([*BASE, *BATCH, "--bogus"], "bogus"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv: list[str], field: str) -> None:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and field in err


def test_console_script_exit_code_2() -> None:
    cmd = [str(Path(sys.executable).parent / "fabricsim"), *BASE, *BATCH, "--tp", "7"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")


INFER = ["plan", "infer", "--model", "llama3-70b", "--system", "dgx-h100", "--gpus", "8"]
LENGTHS = ["--input-len", "1024", "--output-len", "256"]


def test_infer_json_contract(capsys) -> None:
    rc = main([*INFER, *LENGTHS, "--slo-tpot", "25ms", "--top", "3", "--json"])
    assert rc == 0
    payload = json.loads(capsys.readouterr().out)
    assert {"evaluated", "feasible", "elapsed_s", "plans"} <= set(payload) and payload["kind"] == "infer"
    for plan in payload["plans"]:
        assert {"ttft_s", "tpot_s", "batch", "output_tokens_per_s", "layout", "fits", "why"} <= set(plan)
        assert plan["tpot_s"] <= 0.025 and plan["fits"]
    rates = [plan["output_tokens_per_s"] for plan in payload["plans"]]
    assert rates == sorted(rates, reverse=True)


def test_infer_table_and_latency_objective(capsys) -> None:
    rc = main([*INFER, *LENGTHS, "--objective", "latency", "--tp", "4,8"])
    out = capsys.readouterr().out
    assert rc == 0 and "plan infer" in out and "TPOT" in out and "why the others lose" in out


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--slo-tpot", "-1"], "slo-tpot"),
        (["--slo-ttft", "nan"], "slo-ttft"),
        (["--tpot-slo-ms", "25"], "renamed"),
        (["--objective", "cheap"], "objective"),
        (["--tp", "3"], "layout"),
        (["--dtype", "int4"], "dtype"),
        (["--max-batch", "0"], "max-batch"),
    ],
)
def test_infer_bad_input_is_one_line_exit_2(capsys, extra: list[str], field: str) -> None:
    rc = main([*INFER, *LENGTHS, *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and field in err


def test_infer_nothing_fits_is_a_result(capsys) -> None:
    argv = ["plan", "infer", "--model", "llama3-405b", "--system", "dgx-a100", "--gpus", "4", *LENGTHS, "--json"]
    rc = main(argv)
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and payload["plans"] == [] and payload["smallest_memory_per_gpu_bytes"] > 80e9
