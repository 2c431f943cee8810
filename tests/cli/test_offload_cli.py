"""``train --offload`` and ``plan train --search-offload``: JSON keys, tables, one-line errors, sweeps."""

import json

import pytest

from fabricsim import api
from fabricsim.cli.app import main

TRAIN = ["train", "--model", "llama3-70b", "--system", "dgx-a100", "--gpus", "8", "--global-batch", "16"]
TRAIN += ["--seq-len", "4096", "--tp", "8"]
PLAN = ["plan", "train", "--model", "llama3-70b", "--system", "dgx-a100", "--gpus", "8", "--global-batch", "16"]
PLAN += ["--seq-len", "4096", "--top", "2"]


def test_train_offload_json(capsys) -> None:
    rc = main([*TRAIN, "--offload", "optimizer,activations", "--offload-tier", "host", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert payload["layout"]["offload"] == ["optimizer", "activations"] and payload["layout"]["offload_tier"] == "host"
    assert "offload_s" in payload["time_breakdown_s"]
    assert sum(payload["time_breakdown_s"].values()) == pytest.approx(payload["step_time_s"], rel=1e-12)
    assert set(payload["memory_breakdown_bytes_by_tier"]) == {"hbm", "host"}
    assert payload["memory_capacity_bytes_by_tier"]["host"] == 250e9  # 2 TB over 8 GPUs
    assert payload["memory_breakdown_bytes_by_tier"]["hbm"] == payload["memory_breakdown_bytes"]
    assert payload["fits"] == (payload["memory_overflow_tiers"] == [])


def test_train_without_offload_keeps_the_contract(capsys) -> None:
    rc = main([*TRAIN, "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and payload["time_breakdown_s"]["offload_s"] == 0.0
    assert "memory_breakdown_bytes_by_tier" not in payload and "offload" not in payload["layout"]


def test_train_offload_table(capsys) -> None:
    assert main([*TRAIN, "--offload", "weights"]) == 0
    out = capsys.readouterr().out
    assert "offload" in out and "host (of" in out


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--offload", "optimiser"], "offload"),
        (["--offload", "weights", "--offload-tier", "grace"], "offload-tier"),
        (["--offload-tier", "host"], "offload-tier"),
        (["--offload", "weights", "--fidelity", "simulate"], "offload"),
    ],
)
def test_train_offload_errors_are_one_line(capsys, extra: list, field: str) -> None:
    rc = main([*TRAIN, *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and field in err


def test_plan_searches_offload_by_default(capsys) -> None:
    assert main([*PLAN, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["plans"] and all(plan["fits"] for plan in payload["plans"])
    assert all("offload" in plan["layout"] for plan in payload["plans"])  # nothing fits in 80 GB without it
    assert main([*PLAN, "--no-search-offload", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plans"] == []
    assert main([*PLAN, "--offload-tier", "cxl"]) == 2
    assert "no cxl memory tier" in capsys.readouterr().err


def test_sweep_tasks_take_offload() -> None:
    """A sweep's train task passes its fields to api.train: offload and offload_tier included."""
    result = api.train("llama3-70b", "dgx-a100", 8, 16, 4096, tp=8, offload=["optimizer"], offload_tier="host")
    assert dict(result.layout)["offload"] == ["optimizer"]
    payload = result.to_json()
    assert payload["memory_breakdown_bytes_by_tier"]["host"]["optimizer_states"] > 0


def test_sweep_grid_over_offload(tmp_path, capsys) -> None:
    spec = tmp_path / "offload.yaml"
    spec.write_text(
        "name: offload\ntasks:\n  - kind: train\n    grid:\n"
        "      model: llama3-70b\n      system: dgx-a100\n      gpus: 8\n      global_batch: 16\n"
        "      seq_len: 4096\n      tp: 8\n      offload: [optimizer, 'optimizer,weights,activations']\n",
        encoding="utf-8",
    )
    summary = api.sweep(spec, db=tmp_path / "offload.sqlite", workers=1)
    assert summary.tasks_done == 2 and summary.tasks_failed == 0


def test_plan_json_and_table_say_what_feasible_counts(capsys) -> None:
    """Issue 27: with offload search the JSON has ``offload_unsized`` (time-pruned layouts whose
    offload choices were not sized) and the table says ``feasible`` counts the sized layouts;
    without offload search neither appears."""
    question = ["plan", "train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "64"]
    question += ["--global-batch", "64", "--seq-len", "2048", "--top", "2"]
    assert main([*question, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    unsized = payload["offload_unsized"]
    assert unsized > 0  # this question leaves some (tests/planner/test_offload_plan.py checks the counts)
    assert main(question) == 0
    out = capsys.readouterr().out
    assert "feasible (fit, of sized)" in out and f"+ {unsized:,} time-pruned" in out
    assert main([*question, "--no-search-offload", "--json"]) == 0
    assert "offload_unsized" not in json.loads(capsys.readouterr().out)
    assert main([*question, "--no-search-offload"]) == 0
    out = capsys.readouterr().out
    assert "feasible (fit)" in out and "of sized" not in out
