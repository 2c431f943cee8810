"""Smoke tests (issue 25): train, infer, plan train and plan infer run on the torus systems (Google
TPU v5p, v6e and 7x, AWS Trn2) with a small model; ``collective`` picks the torus algorithm inside a
torus domain; ``catalog list`` shows them; ``cost`` refuses a device without a published power."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main

TORUS_SYSTEMS = ("tpu-v5p", "tpu-v6e", "tpu7x", "trn2", "trn2-ultraserver")
SMALL = ["--model", "llama3-8b", "--gpus", "16"]


def _run(capsys, args: list[str]) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("system", TORUS_SYSTEMS)
def test_train_and_infer_run(capsys, system) -> None:
    train = _run(capsys, ["train", *SMALL, "--system", system, "--global-batch", "32", "--seq-len", "1024",
                          "--tp", "4"])  # fmt: skip
    assert train["step_time_s"] > 0 and 0 < train["mfu"] < 1
    infer = _run(capsys, ["infer", *SMALL, "--system", system, "--batch", "4", "--input-len", "256",
                          "--output-len", "32", "--tp", "4"])  # fmt: skip
    assert infer["ttft_s"] > 0 and infer["tpot_s"] > 0


@pytest.mark.parametrize("system", TORUS_SYSTEMS)
def test_plan_train_and_infer_run(capsys, system) -> None:
    plan = _run(capsys, ["plan", "train", *SMALL, "--system", system, "--global-batch", "32", "--seq-len", "1024",
                         "--top", "2"])  # fmt: skip
    assert plan["feasible"] > 0 and plan["plans"]
    plan = _run(capsys, ["plan", "infer", *SMALL, "--system", system, "--input-len", "256", "--output-len", "32",
                         "--top", "2"])  # fmt: skip
    assert plan["feasible"] > 0 and plan["plans"]


@pytest.mark.parametrize("op", ["all-reduce", "all-to-all"])
def test_collective_inside_a_torus_domain_runs_the_torus_algorithm(capsys, op) -> None:
    out = _run(capsys, ["collective", op, "--system", "tpu-v5p", "--gpus", "64", "--size", "1GiB"])
    assert out["algorithm"] == "torus"


def test_catalog_list_shows_the_torus_systems(capsys) -> None:
    assert main(["catalog", "list"]) == 0
    out = capsys.readouterr().out
    for name in (*TORUS_SYSTEMS, "trainium2"):
        assert name in out


def test_cost_refuses_a_device_without_published_power(capsys) -> None:
    assert main(["cost", "--system", "tpu-v5p", "--gpus", "64"]) == 2
    err = capsys.readouterr().err
    assert "tdp_w" in err and "Traceback" not in err
