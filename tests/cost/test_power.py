"""Power, bill of materials and capex of a cluster (fabricsim.api.cost)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim import api
from fabricsim.api.cost import load_cost_catalog
from fabricsim.errors import FabricsimError

XDR = {"nic": "ib-xdr", "switch": "quantum-x800-q3400"}  # an 800G fabric


def test_groups_add_up_and_cooling_follows_pue():
    result = api.cost("dgx-h100", 1024)
    power = result.power.to_json()
    parts = sum(v for k, v in power.items() if k not in ("cooling", "total"))
    assert power["total"] == pytest.approx(parts + power["cooling"])
    assert power["cooling"] == pytest.approx((result.power.pue - 1) * parts)
    assert result.power.pue == load_cost_catalog().facility.pue_air


def test_one_node_at_max_is_its_nameplate():
    """DGX H100: 10.2 kW rated (user guide); one node has no scale-out fabric to add."""
    power = api.cost("dgx-h100", 8, cooling="air").power
    assert power.gpus + power.hosts + power.nics == pytest.approx(10_200)
    assert power.switches == 0 and power.optics == 0
    assert power.gpus == pytest.approx(8 * 700)


def test_loads_order_and_liquid_cooling_is_cheaper():
    totals = {load: api.cost("dgx-h100", 256, load=load).power.total for load in ("idle", "infer", "train", "max")}
    assert totals["idle"] < totals["infer"] < totals["train"] < totals["max"]
    liquid = api.cost("dgx-h100", 256, cooling="liquid").power
    air = api.cost("dgx-h100", 256, cooling="air").power
    assert liquid.it_W == pytest.approx(air.it_W) and liquid.total < air.total


def test_cpo_cuts_optics_per_port_3_to_3_5x_and_the_total_by_the_bom():
    pluggable = api.cost("dgx-b200", 1024, optics="pluggable", **XDR)
    cpo = api.cost("dgx-b200", 1024, optics="cpo", **XDR)
    ratio = pluggable.optics_W_per_port / cpo.optics_W_per_port
    assert 3.0 <= ratio <= 3.5
    switch_ports = cpo.bom.cpo_ports
    assert switch_ports == pluggable.bom.transceivers - pluggable.bom.nics  # NIC ends stay pluggable
    saved_it = switch_ports * (pluggable.optics_W_per_port - cpo.optics_W_per_port)
    assert pluggable.power.it_W - cpo.power.it_W == pytest.approx(saved_it)
    assert pluggable.power.total - cpo.power.total == pytest.approx(saved_it * pluggable.power.pue)


def test_cpo_needs_catalogued_cpo_ports():
    with pytest.raises(FabricsimError) as info:
        api.cost("dgx-h100", 1024, optics="cpo")  # 400G NDR: no CPO product catalogued
    assert info.value.field == "optics"


def test_dragonfly_fabric_bom():
    result = api.cost("dgx-h100", 16_384, topology="dragonfly:a=16,p=8,h=8")
    cables = result.bom.to_json()["cables"]
    assert cables["global"] == {"medium": "fiber", "count": 8_256}
    assert cables["local"]["medium"] == "dac" and cables["access"]["count"] == 16_384
    assert result.bom.transceivers == 2 * 8_256


def test_capex_with_prices_and_overrides(tmp_path):
    base = api.cost("dgx-h100", 1024)
    assert base.capex.total == pytest.approx(sum(v for _, v in base.capex.groups))
    prices = tmp_path / "prices.yaml"
    prices.write_text("switches:\n  quantum2-qm9700: {price_usd: 1}\n", encoding="utf-8")
    cheap = api.cost("dgx-h100", 1024, prices=str(prices))
    switches = dict(cheap.capex.groups)["switches"]
    assert switches == cheap.bom.switches * 1
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("gpus:\n  h100-sxm: {price_usd: null}\n", encoding="utf-8")
    missing = api.cost("dgx-h100", 1024, prices=str(unknown))
    assert missing.to_json()["capex_usd"] is None and missing.to_json()["prices_missing"] == ["gpus.h100-sxm"]


@pytest.mark.parametrize(
    ("text", "field"),
    [("facility: {pue_air: 0.5}\n", "prices"), ("- 1\n", "prices"), ("switches: {x: {watts: 3}}\n", "prices")],
)
def test_bad_prices_file_is_a_one_line_error(tmp_path, text, field):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FabricsimError) as info:
        api.cost("dgx-h100", 64, prices=str(path))
    assert info.value.field == field and "\n" not in str(info.value)


def test_prices_must_be_a_regular_file(tmp_path):
    with pytest.raises(FabricsimError) as info:
        api.cost("dgx-h100", 64, prices=str(tmp_path))
    assert info.value.field == "prices"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"topology": "rail-onl"}, "topology"),
        ({"load": "busy"}, "load"),
        ({"nic": "nvlink4"}, "nic"),
        ({"nic": "ib-nd"}, "nic"),  # unknown: named as the NIC, not as a link
        ({"switch": "spectrum"}, "switch"),
        ({"switch": "nvswitch-gen3"}, "switch"),
    ],
)
def test_bad_choices_name_the_field(kwargs, field):
    with pytest.raises(FabricsimError) as info:
        api.cost("dgx-h100", 64, **kwargs)
    assert info.value.field == field


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=1, max_value=600))
def test_power_and_fabric_never_shrink_with_more_nodes(nodes):
    small, large = api.cost("dgx-h100", 8 * nodes), api.cost("dgx-h100", 8 * (nodes + 1))
    assert large.power.total > small.power.total
    assert large.power.network_W >= small.power.network_W
    assert large.bom.switches >= small.bom.switches


def test_a_builder_fabric_needs_a_port_per_nic():
    with pytest.raises(FabricsimError) as info:
        api.cost("dgx-h100", 1024, topology="nvl72")
    assert info.value.field == "topology" and "72 host ports" in str(info.value)


def test_nvl72_defaults_to_liquid_cooling_and_rail_only_needs_whole_racks():
    result = api.cost("gb200-nvl72", 144)
    assert result.cooling == "liquid" and result.power.pue == load_cost_catalog().facility.pue_liquid
    with pytest.raises(FabricsimError) as info:
        api.cost("gb200-nvl72", 148, topology="rail-only")
    assert info.value.field == "gpus"


@pytest.mark.parametrize(("load", "measured_W", "rel"), [
    # Latif et al. (arXiv 2412.08602): an 8-GPU H100 HGX node peaked at ~8.4 kW training
    # Llama2-13b (rated 10.2 kW); inference held ~0.7 x the rated maximum (0.4-0.9 P5-P95).
    ("train", 8_400, 0.01),
    ("infer", 0.7 * 10_200, 0.01),
])
def test_a_busy_node_draws_its_measured_share_of_the_nameplate(load, measured_W, rel):
    # the whole server follows the load (GPUs, host and NICs), not the GPUs alone: the measurement
    # is of the node at the wall
    power = api.cost("dgx-h100", 8, load=load).power
    assert power.gpus + power.hosts + power.nics == pytest.approx(measured_W, rel=rel)
    maximum = api.cost("dgx-h100", 8, load="max").power
    for part in ("gpus", "hosts", "nics"):
        if getattr(maximum, part):  # one node has no scale-out NICs
                assert getattr(power, part) / getattr(maximum, part) == pytest.approx(
                (power.gpus + power.hosts + power.nics) / 10_200)


@pytest.mark.parametrize(("system", "cooling", "low", "high"), [
    # reported PUE ranges (shared/reference/power-and-cost.md, Facility): air-cooled data centres
    # 1.3-1.6, liquid-cooled AI halls 1.1-1.2
    ("dgx-h100", "air", 1.3, 1.6),
    ("gb200-nvl72", "liquid", 1.1, 1.2),
])
def test_facility_overhead_is_within_the_reported_pue_range(system, cooling, low, high):
    power = api.cost(system, 144 if system == "gb200-nvl72" else 1024, cooling=cooling).power
    assert low <= power.total / power.it_W <= high


def test_an_ndr_switch_with_its_transceivers_draws_about_1_7_kw():
    # QM9700: ~1.7 kW with its optics (shared/reference/power-and-cost.md), i.e. the box plus its
    # 32 twin-port OSFP cages at 17 W each (QM9700 documentation)
    result = api.cost("dgx-h100", 1024)
    per_switch = result.power.switches / result.bom.switches
    assert per_switch + 32 * 17 == pytest.approx(1_700, rel=0.05)
