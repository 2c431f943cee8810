"""``--background`` needs a scale-out fabric: a job inside one scale-up domain is refused in one line
with exit status 2 (network/phase.py, background_flows)."""

from __future__ import annotations

import pytest

from fabricsim.cli.app import main


@pytest.mark.parametrize("fidelity", ["flow", "packet"])
def test_a_background_on_one_dgx_node_is_refused_in_one_line_naming_background(capsys, fidelity):
    argv = ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8",
            "--global-batch", "16", "--seq-len", "1024", "--fidelity", fidelity,
            "--background", "permutation:0.5"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "background" in err and "one scale-up domain" in err and "--background" in err
