"""Issue 25: train, plan train, infer and plan infer run on HGX B300 and GB300 NVL72 with a small model."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main


def _json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("system", "gpus"), [("hgx-b300", 16), ("gb300-nvl72", 72)])
def test_train(capsys, system: str, gpus: int) -> None:
    argv = ["train", "--model", "llama3-8b", "--system", system, "--gpus", str(gpus), "--global-batch", "144",
            "--seq-len", "4096"]
    result = _json(capsys, argv)
    assert result["fits"] and result["step_time_s"] > 0 and 0 < result["mfu"] < 1


@pytest.mark.parametrize("system", ["hgx-b300", "gb300-nvl72"])
def test_plan_train(capsys, system: str) -> None:
    plan = _json(capsys, ["plan", "train", "--model", "llama3-8b", "--system", system, "--gpus", "16",
                          "--global-batch", "64", "--seq-len", "4096", "--top", "1"])
    assert plan["feasible"] > 0 and plan["plans"][0]["fits"] and 0 < plan["plans"][0]["mfu"] < 1


@pytest.mark.parametrize("system", ["hgx-b300", "gb300-nvl72"])
def test_infer_and_plan_infer(capsys, system: str) -> None:
    lengths = ["--input-len", "1024", "--output-len", "256"]
    result = _json(capsys, ["infer", "--model", "llama3-8b", "--system", system, "--gpus", "1", "--batch", "16",
                            *lengths])
    assert result["fits"] and result["ttft_s"] > 0 and result["tpot_s"] > 0
    plan = _json(capsys, ["plan", "infer", "--model", "llama3-8b", "--system", system, "--gpus", "8", *lengths,
                          "--top", "2"])
    assert plan["feasible"] > 0 and plan["plans"][0]["fits"]


def test_b300_fits_a_larger_batch_than_b200(capsys) -> None:
    """Same 8 TB/s HBM, 288 GB instead of 180 GB: a larger batch of Llama 3 70B fits on one B300."""
    args = ["--model", "llama3-70b", "--gpus", "1", "--batch", "max", "--input-len", "4096", "--output-len", "512",
            "--dtype", "fp8"]
    b200 = _json(capsys, ["infer", "--system", "dgx-b200", *args])
    b300 = _json(capsys, ["infer", "--system", "hgx-b300", *args])
    assert b300["batch"] > b200["batch"]
