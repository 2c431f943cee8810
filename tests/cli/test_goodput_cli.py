"""``fabricsim goodput``: the JSON contract, the table and one-line errors."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main

CONTRACT = {
    "interruptions",
    "interruptions_by_cause",
    "mttf_s",
    "checkpoint_interval_s",
    "checkpoint_time_s",
    "restart_time_s",
    "ettr",
    "goodput_tokens_per_s",
    "lost_gpu_hours",
}
BASE = ["goodput", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "64", "--days", "20"]
BASE += ["--global-batch", "512", "--seq-len", "4096", "--zero", "1", "--runs", "50", "--seed", "3"]


def test_json_contract(capsys):
    assert main([*BASE, "--checkpoint-target", "host", "--pfs-bandwidth", "500GB/s", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= CONTRACT
    assert set(out["interruptions"]) == set(out["ettr"]) == {"mean", "p10", "p90"}
    assert out["checkpoint_target"] == "host" and out["runs"] == 50
    assert sum(out["interruptions_by_cause"].values()) == pytest.approx(out["interruptions"]["mean"])
    assert out["checkpoint_overlapped_s"] == pytest.approx(out["checkpoint_bytes"] / 500e9)


def test_fixed_interval_and_table(capsys):
    assert main([*BASE, "--checkpoint-interval", "1200", "--link-failures", "stop"]) == 0
    text = capsys.readouterr().out
    assert "ETTR" in text and "faulty_gpu" in text and "lost GPU-hours" in text


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--days", "-3"], "days"),
        (["--checkpoint-interval", "often"], "checkpoint-interval"),
        (["--checkpoint-target", "tape"], "checkpoint-target"),
        (["--pfs-bandwidth", "fast"], "pfs-bandwidth"),
        (["--runs", "0"], "runs"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, extra, field):
    assert main([*BASE, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {field}") and "\n" not in err


def test_restart_phases_can_be_set(capsys):
    assert main([*BASE, "--restart", "detection=30,reschedule=0,startup=60,warmup=10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["restart_time_s"] == pytest.approx(100 + out["checkpoint_load_s"])


@pytest.mark.parametrize("text", ["boot=5", "startup=x", "startup", "warmup=-1"])
def test_bad_restart_phases_are_one_line_errors(capsys, text):
    assert main([*BASE, "--restart", text]) == 2
    assert capsys.readouterr().err.startswith("error: restart")
