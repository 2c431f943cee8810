"""Issue 25: NVIDIA Blackwell Ultra (B300 / HGX B300, GB300 NVL72) and the Ethernet AI switches are
in the catalog, with per-direction figures, and every switch can be priced by ``fabricsim cost``."""

from __future__ import annotations

import pytest

from fabricsim import api, catalog

NEW_SWITCHES = ("tomahawk5", "tomahawk6", "jericho3-ai-ramon3", "arista-7808r3")


def test_catalog_lists_the_new_entries() -> None:
    listing = api.catalog_list()
    assert {"b300", "gb300"} <= set(listing["devices"])
    assert {"hgx-b300", "gb300-nvl72"} <= set(listing["systems"])
    assert set(NEW_SWITCHES) | {"spectrum4-sn5600"} <= set(listing["switches"])


def test_blackwell_ultra_figures_are_per_direction_and_sourced() -> None:
    gb300 = catalog.load_device("gb300")
    assert gb300.peak("fp4") == 15e15 and gb300.hbm_capacity_bytes == 288e9
    assert gb300.nvlink_bandwidth_Bps == 900e9  # NVLink 5: 1.8 TB/s bidirectional, halved
    assert "15 PetaFLOPS dense NVFP4" in gb300.sources["peak_flops.fp4"]
    b300 = catalog.load_device("b300")
    assert b300.peak("fp4") > catalog.load_device("b200").peak("fp4") and b300.hbm_capacity_bytes == 288e9
    rack = catalog.load_system("gb300-nvl72")
    assert rack.scale_up.domain_gpus == 72 and rack.gpus_per_node == 4
    assert rack.scale_out.nic.bandwidth_Bps == 100e9  # ConnectX-8, 800 Gb/s per GPU
    hgx = catalog.load_system("hgx-b300")
    assert hgx.scale_up.domain_gpus == 8 and hgx.scale_out.nics_per_node == 8
    assert hgx.host_link.name == "pcie-gen6"


def test_switch_figures() -> None:
    assert catalog.load_switch("tomahawk6").radix * catalog.load_switch("tomahawk6").port_bandwidth_Bps * 8 == 102.4e12
    assert catalog.load_switch("tomahawk5").radix * catalog.load_switch("tomahawk5").port_bandwidth_Bps * 8 == 51.2e12
    deep, shallow = catalog.load_switch("arista-7808r3"), catalog.load_switch("spectrum4-sn5600")
    assert deep.buffer_bytes is not None and shallow.buffer_bytes is not None
    assert deep.buffer_bytes > 100 * shallow.buffer_bytes  # HBM-backed VOQ spine vs on-chip buffer
    assert catalog.load_switch("tomahawk5").buffer_bytes is None  # not published: left out


@pytest.mark.parametrize("switch", [*NEW_SWITCHES, "spectrum4-sn5600"])
def test_cost_prices_every_switch(switch: str) -> None:
    result = api.cost("dgx-b200", 512, nic="roce-800", switch=switch).to_json()
    assert result["bom"]["switch_model"] == switch and result["bom"]["switches_total"] > 0
    assert result["power_W"]["switches"] > 0


@pytest.mark.parametrize(("system", "gpus"), [("hgx-b300", 512), ("gb300-nvl72", 144)])
def test_cost_runs_on_the_new_systems(system: str, gpus: int) -> None:
    power = api.cost(system, gpus).to_json()["power_W"]
    assert power["gpus"] == pytest.approx(gpus * catalog.load_system(system).device.tdp_w)
