"""``fabricsim goodput`` on a TPU pod prints what a failed cube costs with and without OCS."""

from __future__ import annotations

from fabricsim.cli.app import main

ARGS = ["--model", "llama3-8b", "--gpus", "256", "--global-batch", "1024", "--seq-len", "4096", "--tp", "4",
        "--zero", "1", "--days", "30", "--runs", "20"]  # fmt: skip


def test_the_table_shows_the_blast_radius_on_tpu_pods_only(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["goodput", "--system", "tpu-v5p", *ARGS]) == 0
    out = capsys.readouterr().out
    assert "a failed 64-chip cube" in out and "with OCS" in out and "8,960" in out
    assert main(["goodput", "--system", "dgx-h100", *ARGS]) == 0
    assert "with OCS" not in capsys.readouterr().out
