"""``fabricsim cost``: JSON contract, table, determinism and one-line errors."""

from __future__ import annotations

import json

from fabricsim.cli.app import main

POWER_KEYS = {"gpus", "hosts", "nics", "switches", "optics", "cooling", "total"}


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cost_json_contract_and_determinism(capsys):
    argv = ["cost", "--system", "dgx-h100", "--gpus", "1024", "--json"]
    first = _json(capsys, argv)
    assert set(first["power_W"]) == POWER_KEYS
    assert first["bom"]["switches"] == {"tier1": 32, "tier2": 16}
    assert first["bom"]["switch_ports_used"] == {"tier1": 2048, "tier2": 1024}
    assert first["capex_usd"]["total"] > 0
    assert first["optics"] == "pluggable" and first["cooling"] == "air"
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == first


def test_cost_options_reach_the_result(capsys):
    argv = ["cost", "--system", "dgx-b200", "--gpus", "512", "--nic", "ib-xdr", "--switch", "quantum-x800-q3400"]
    result = _json(capsys, [*argv, "--optics", "cpo", "--cooling", "liquid", "--load", "train", "--json"])
    assert result["optics"] == "cpo" and result["cooling"] == "liquid" and result["load"] == "train"
    assert result["bom"]["cpo_ports"] > 0 and result["bom"]["port_gbps"] == 800


def test_cost_table_and_rail_only_comparison(capsys):
    assert main(["cost", "--system", "dgx-h100", "--gpus", "256"]) == 0
    out = capsys.readouterr().out
    assert "bill of materials" in out and "quantum2-qm9700" in out
    result = _json(capsys, ["cost", "--system", "dgx-h100", "--gpus", "8192", "--compare-rail-only", "--json"])
    assert {"network_power_saving", "network_cost_saving", "all_to_all", "paper_ranges"} <= set(result)
    assert main(["cost", "--system", "dgx-h100", "--gpus", "8192", "--compare-rail-only"]) == 0
    assert "MoE all-to-all slowdown" in capsys.readouterr().out


def test_bad_input_is_one_line_exit_2(capsys):
    for argv in (
        ["cost", "--system", "dgx-h100", "--gpus", "12"],
        ["cost", "--system", "dgx-h100", "--gpus", "64", "--optics", "laser"],
        ["cost", "--system", "dgx-h100", "--gpus", "64", "--prices", "/nonexistent.yaml"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and err.count("\n") == 1
