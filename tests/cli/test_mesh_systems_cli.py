"""Smoke tests (issue 25): train, infer, plan train and plan infer run on the switchless AMD
Instinct and Intel Gaudi 3 systems with a small model, and ``catalog list`` shows them."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main

MESH_SYSTEMS = ("mi300x-8", "mi325x-8", "mi355x-8", "gaudi3-8")
SMALL = ["--model", "llama3-8b", "--gpus", "8"]


def _run(capsys, args: list[str]) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("system", MESH_SYSTEMS)
def test_train_and_infer_run(capsys, system) -> None:
    train = _run(capsys, ["train", *SMALL, "--system", system, "--global-batch", "16", "--seq-len", "1024",
                          "--tp", "8"])  # fmt: skip
    assert train["step_time_s"] > 0 and 0 < train["mfu"] < 1
    infer = _run(capsys, ["infer", *SMALL, "--system", system, "--batch", "4", "--input-len", "256",
                          "--output-len", "32", "--tp", "8"])  # fmt: skip
    assert infer["ttft_s"] > 0 and infer["tpot_s"] > 0


@pytest.mark.parametrize("system", MESH_SYSTEMS)
def test_plan_train_and_infer_run(capsys, system) -> None:
    plan = _run(capsys, ["plan", "train", *SMALL, "--system", system, "--global-batch", "16", "--seq-len", "1024",
                         "--top", "2"])  # fmt: skip
    assert plan["feasible"] > 0 and plan["plans"]
    plan = _run(capsys, ["plan", "infer", *SMALL, "--system", system, "--input-len", "256", "--output-len", "32",
                         "--top", "2"])  # fmt: skip
    assert plan["feasible"] > 0 and plan["plans"]


def test_catalog_list_shows_the_switchless_systems(capsys) -> None:
    assert main(["catalog", "list"]) == 0
    out = capsys.readouterr().out
    for name in (*MESH_SYSTEMS, "mi300x", "mi325x", "mi355x", "gaudi3"):
        assert name in out
