"""``catalog show`` reports which kernel figures of a device (or a system's device) are measured and
which are generation defaults, in the JSON and in the table (issue 25)."""

from __future__ import annotations

import json

from fabricsim import api
from fabricsim.cli.app import main


def test_systems_and_devices_carry_kernel_figures() -> None:
    system = api.catalog_show("systems", "tpu-v5p")
    assert system["kernel_figures"] == api.catalog_show("devices", "tpu-v5p")["kernel_figures"]
    assert "attention" in system["kernel_figures"]["defaults"]
    measured = api.catalog_show("systems", "dgx-h100")["kernel_figures"]
    assert "attention" in measured["measured"] and "attention" not in measured["defaults"]
    assert "kernel_figures" not in api.catalog_show("switches", "tomahawk5")


def test_cli_json_and_table(capsys, monkeypatch) -> None:
    assert main(["catalog", "show", "devices", "trainium2", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)["kernel_figures"]
    assert figures["generation"] == "trainium2" and figures["measured"] == []
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line
    assert main(["catalog", "show", "devices", "gb200"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "kernel_figures." in line]
    defaults = next(line for line in rows if "kernel_figures.defaults " in line)
    assert "sustained clock" in defaults and "attention" not in defaults
    assert any("kernel_figures.summary" in line and "measured: sm count" in line for line in rows)
