"""``fabricsim warmup`` compiles or loads the packet kernel ahead of time and says which (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path

from fabricsim.cli.app import main
from fabricsim.network.packet import jit
from fabricsim.network.packet.loop import run as packet_kernel

CI_SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "run"


def test_warmup_leaves_the_kernel_ready_and_says_what_it_did(capsys):
    assert main(["warmup", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [kernel] = out["kernels"]
    assert kernel["name"] == "packet"
    assert kernel["action"] in {"compiled", "loaded from cache", "already loaded"}
    assert not jit.will_compile(packet_kernel)
    assert main(["warmup"]) == 0  # a second time in one process: nothing left to do
    captured = capsys.readouterr()
    assert "packet kernel: already loaded" in captured.out and captured.err == ""


def test_ci_warms_up_before_the_tests_instead_of_timing_a_packet_run():
    lines = [line.strip() for line in CI_SCRIPT.read_text().splitlines() if not line.lstrip().startswith("#")]
    warm, tests = lines.index("fabricsim warmup"), next(i for i, line in enumerate(lines) if "pytest" in line)
    assert warm < tests
    assert not any(line.startswith("fabricsim traffic") for line in lines)
