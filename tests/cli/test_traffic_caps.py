"""Caps on ``fabricsim traffic`` runs that would hang (issue 27): the flows one flow-fidelity run
simulates, and the hosts and packets of one packet-fidelity run. Each refusal is one line naming
the ``FABRICSIM_MAX_*`` variable that raises the cap, exit status 2, before any work."""

from __future__ import annotations

import pytest

from fabricsim.api.communication import check_simulated_flows
from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.limits import cap


def refused(capsys, argv: list[str], variable: str) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
    assert variable in captured.err, captured.err
    return captured.err


def test_all_to_all_of_a_million_flows_is_refused_at_flow_fidelity(capsys) -> None:
    """fat-tree:k=16 all-to-all is 1,047,552 flows (under the FLOWS cap): it ran for hours."""
    err = refused(capsys, ["traffic", "all-to-all", "--topology", "fat-tree:k=16"], "FABRICSIM_MAX_SIMULATED_FLOWS")
    assert "all-to-all flows: 1047552" in err and "--hosts" in err


def test_all_to_all_of_a_million_flows_is_refused_at_packet_fidelity(capsys) -> None:
    argv = ["traffic", "all-to-all", "--topology", "fat-tree:k=16", "--fidelity", "packet", "--size", "64KiB"]
    err = refused(capsys, argv, "FABRICSIM_MAX_PACKET_ENDPOINTS")
    assert "1024 endpoints" in err and "--fidelity flow" in err


def test_the_k64_permutation_is_within_the_flow_cap() -> None:
    """The issue's goal case (65,536 hosts) must run, not be capped."""
    check_simulated_flows("permutation", 64**3 // 4, 64**3 // 4)
    with pytest.raises(FabricsimError, match="FABRICSIM_MAX_SIMULATED_FLOWS"):
        check_simulated_flows("permutation", cap("SIMULATED_FLOWS") + 1, cap("SIMULATED_FLOWS") + 1)


def test_the_flow_cap_follows_its_variable(capsys, monkeypatch) -> None:
    argv = ["traffic", "permutation", "--topology", "fat-tree:k=8", "--json"]  # 128 flows
    monkeypatch.setenv("FABRICSIM_MAX_SIMULATED_FLOWS", "127")
    refused(capsys, argv, "FABRICSIM_MAX_SIMULATED_FLOWS")
    monkeypatch.setenv("FABRICSIM_MAX_SIMULATED_FLOWS", "128")
    assert main(argv) == 0


def test_the_packet_caps_follow_their_variables(capsys, monkeypatch) -> None:
    argv = ["traffic", "permutation", "--topology", "fat-tree:k=4", "--fidelity", "packet", "--size", "8KiB"]
    monkeypatch.setenv("FABRICSIM_MAX_PACKET_ENDPOINTS", "15")  # fat-tree:k=4 has 16 hosts
    refused(capsys, argv, "FABRICSIM_MAX_PACKET_ENDPOINTS")
    monkeypatch.setenv("FABRICSIM_MAX_PACKET_ENDPOINTS", "16")
    monkeypatch.setenv("FABRICSIM_MAX_PACKETS", "31")  # 16 flows x 2 packets of 4,096 B
    err = refused(capsys, argv, "FABRICSIM_MAX_PACKETS")
    assert err.startswith("error: size: 32 packets")
    monkeypatch.setenv("FABRICSIM_MAX_PACKETS", "32")
    assert main([*argv, "--json"]) == 0
