"""Issue 27's hangs through the command line: refused at once with the cap's one-line message."""

from __future__ import annotations

from fabricsim.cli.app import main


def test_simulating_a_16m_sequence_batch_is_refused_by_the_cap(capsys):
    argv = ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--global-batch", "16777216",
            "--seq-len", "512", "--pp", "2", "--fidelity", "simulate", "--seeds", "1"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: global-batch: 4194304 micro-batches x 2 pipeline chunks")
    assert "set FABRICSIM_MAX_SIMULATED_PASSES to raise it" in captured.err
