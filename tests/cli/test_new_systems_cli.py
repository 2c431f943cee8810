"""Smoke tests (issue 25): train, infer, plan train and plan infer run with a small model on every
system added for issue 25 -- switchless meshes (AMD Instinct, Intel Gaudi 3), tori (Google TPU,
AWS Trn2), NVIDIA Blackwell Ultra -- and ``catalog list`` shows them; plus what each kind adds:
the torus algorithm inside a torus, ``cost`` refusing a device without a published power, a
B300's larger batch."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main

# (system, GPUs, TP) of a small llama3-8b run on one scale-up domain or two
SYSTEMS = (
    *((name, 8, 8) for name in ("mi300x-8", "mi325x-8", "mi355x-8", "gaudi3-8")),
    *((name, 16, 4) for name in ("tpu-v5p", "tpu-v6e", "tpu7x", "trn2", "trn2-ultraserver")),
    ("hgx-b300", 16, 8),
    ("gb300-nvl72", 72, 8),
)
DEVICES = ("mi300x", "mi325x", "mi355x", "gaudi3", "trainium2", "b300", "gb300")
IDS = [s[0] for s in SYSTEMS]


def _run(capsys, args: list[str]) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("system", "gpus", "tp"), SYSTEMS, ids=IDS)
def test_train_and_infer_run(capsys, system, gpus, tp) -> None:
    small = ["--model", "llama3-8b", "--system", system, "--gpus", str(gpus)]
    train = _run(capsys, ["train", *small, "--global-batch", str(2 * gpus), "--seq-len", "1024", "--tp", str(tp)])
    assert train["step_time_s"] > 0 and 0 < train["mfu"] < 1
    infer = _run(capsys, ["infer", *small, "--batch", "4", "--input-len", "256", "--output-len", "32",
                          "--tp", str(tp)])  # fmt: skip
    assert infer["ttft_s"] > 0 and infer["tpot_s"] > 0


@pytest.mark.parametrize(("system", "gpus", "tp"), SYSTEMS, ids=IDS)
def test_plan_train_and_infer_run(capsys, system, gpus, tp) -> None:
    small = ["--model", "llama3-8b", "--system", system, "--gpus", str(min(gpus, 16))]
    plan = _run(capsys, ["plan", "train", *small, "--global-batch", "32", "--seq-len", "1024", "--top", "2"])
    assert plan["feasible"] > 0 and plan["plans"]
    plan = _run(capsys, ["plan", "infer", *small, "--input-len", "256", "--output-len", "32", "--top", "2"])
    assert plan["feasible"] > 0 and plan["plans"]


def test_catalog_list_shows_them(capsys) -> None:
    assert main(["catalog", "list"]) == 0
    out = capsys.readouterr().out
    for name in (*IDS, *DEVICES):
        assert name in out


@pytest.mark.parametrize("op", ["all-reduce", "all-to-all"])
def test_collective_inside_a_torus_domain_runs_the_torus_algorithm(capsys, op) -> None:
    out = _run(capsys, ["collective", op, "--system", "tpu-v5p", "--gpus", "64", "--size", "1GiB"])
    assert out["algorithm"] == "torus"


def test_cost_refuses_a_device_without_published_power(capsys) -> None:
    assert main(["cost", "--system", "tpu-v5p", "--gpus", "64"]) == 2
    err = capsys.readouterr().err
    assert "tdp_w" in err and "Traceback" not in err


def test_b300_fits_a_larger_batch_than_b200(capsys) -> None:
    """Same 8 TB/s HBM, 288 GB instead of 180 GB: a larger batch of Llama 3 70B fits on one B300."""
    args = ["--model", "llama3-70b", "--gpus", "1", "--batch", "max", "--input-len", "4096", "--output-len", "512",
            "--dtype", "fp8"]
    b200 = _run(capsys, ["infer", "--system", "dgx-b200", *args])
    b300 = _run(capsys, ["infer", "--system", "hgx-b300", *args])
    assert b300["batch"] > b200["batch"]
