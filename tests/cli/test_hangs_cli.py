"""Issue 27's hangs through the command line: refused at once with the cap's one-line message."""

from __future__ import annotations

import io
import json
import sys

from fabricsim.cli import progress
from fabricsim.cli.app import main


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_simulating_a_16m_sequence_batch_is_refused_by_the_cap(capsys):
    argv = ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--global-batch", "16777216",
            "--seq-len", "512", "--pp", "2", "--fidelity", "simulate", "--seeds", "1"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: global-batch: 4194304 micro-batches x 2 pipeline chunks")
    assert "set FABRICSIM_MAX_SIMULATED_PASSES to raise it" in captured.err


def test_the_spinner_shows_only_on_a_terminal_and_only_after_the_delay(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "NOTICE_AFTER_S", 3600.0)
    with progress.working("quick work"):  # ends long before the delay
        pass
    assert terminal.getvalue() == ""
    monkeypatch.setattr(progress, "NOTICE_AFTER_S", 0.0)  # at once: the block counts as slow
    with progress.working("slow work"):
        pass
    assert "slow work" in terminal.getvalue()
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    with progress.working("slow work"):
        pass
    assert pipe.getvalue() == ""  # logs, pipes and tests: nothing


def test_validate_shows_progress_on_a_terminal_and_keeps_stdout_clean(monkeypatch, capsys):
    monkeypatch.setattr(progress, "NOTICE_AFTER_S", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["validate", "kernels", "--json"]) == 0
    assert "validate: running the published-measurement suites" in terminal.getvalue()
    assert json.loads(capsys.readouterr().out)["suites"]
