"""``collective --fidelity packet`` on one DGX H100: no leg crosses a NIC (the NVLink legs run
lossless apart from the NIC's transport, network/phase.py ``ScaleUpSplit``), so the JSON's
``transport`` is null rather than a NIC family ("custom" before), and the table says so; two nodes
still name the NIC's transport."""

from __future__ import annotations

import json

from fabricsim.cli.app import main


def _argv(gpus: int, size: str) -> list[str]:
    return ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", str(gpus), "--size", size, "--fidelity",
            "packet"]  # fmt: skip


ONE_NODE = _argv(8, "64MiB")


def test_one_node_names_no_transport(capsys) -> None:
    assert main([*ONE_NODE, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["transport"] is None and out["time_s"] > 0
    assert main(ONE_NODE) == 0
    assert "no leg crossed a NIC" in capsys.readouterr().out


def test_two_nodes_name_the_nics_transport(capsys) -> None:
    argv = [*_argv(16, "4MiB"), "--json", "--transport", "roce"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["transport"] == "roce"
