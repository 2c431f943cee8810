"""The fabric in the loop through the public API: placement, oversubscription, NICs, background (issue 23)."""

import pytest

from fabricsim import api
from fabricsim.errors import FabricsimError

GPT3 = ("gpt3-175b", "dgx-h100", 1024, 512, 2048)
LEAF_SPINE = "leaf-spine:leaves=32,spines=8,hosts_per_leaf=32,oversubscription={}"


def _gpt3(oversubscription: float, placement: str) -> dict:
    return api.simulate_train(
        *GPT3, fidelity="flow", tp=8, pp=8, topology=LEAF_SPINE.format(oversubscription), placement=placement
    ).to_json()


def test_spread_dp_rings_on_a_4_to_1_fabric_take_twice_as_long_and_the_bytes_per_tier_say_why():
    """GPT-3 175B on 1,024 H100, tp8 pp8, no gradient-reduce overlap (the default): spread placement
    puts every hop of the DP rings across the 4:1 spines; packed keeps most of them under a leaf."""
    flat = _gpt3(1, "spread")
    packed, spread = _gpt3(4, "packed"), _gpt3(4, "spread")
    dp = {name: run["comm_busy_s"]["dp-all-reduce"] for name, run in (("flat", flat), ("packed", packed),
                                                                        ("spread", spread))}
    assert dp["spread"] >= 2 * dp["flat"]
    assert dp["flat"] * 0.99 <= dp["packed"] <= dp["spread"]
    spine = {name: run["network"]["dimensions"]["dp"]["bytes_by_tier"]["spine"] for name, run in
             (("packed", packed), ("spread", spread))}
    assert spread["network"]["dimensions"]["dp"]["highest_tier"] == "spine"
    assert spine["spread"] > 2 * spine["packed"]
    assert spread["step_time_s"] > packed["step_time_s"] >= packed["analytic_step_time_s"] * 0.999


def test_the_network_block_adds_to_the_analytic_keys():
    simulated = api.simulate_train(*GPT3, fidelity="simulate", tp=8, pp=8).to_json()
    flow = _gpt3(1, "packed")
    assert set(simulated) <= set(flow) and "network" not in simulated
    network = flow["network"]
    assert network["fidelity"] == "flow" and network["placement"] == "packed"
    assert set(network["dimensions"]) == {"tp", "dp", "pp"}
    assert network["mixes_timed"] >= 1 and network["exposed_s"]


def test_a_non_blocking_packed_step_at_flow_fidelity_is_within_3_percent_of_analytic():
    flow = _gpt3(1, "packed")
    assert flow["step_time_s"] == pytest.approx(flow["analytic_step_time_s"], rel=0.03)


@pytest.mark.parametrize(
    ("choice", "field"),
    [
        ({"placement": "pakced"}, "placement"),
        ({"topology": "leaf-spine:leaves=1"}, "topology"),  # the option; its message names the key (spines)
        ({"nic": "nvlink4"}, "nic"),
        ({"nic": "ib-nope"}, "nic"),
        ({"background": "permutation:2"}, "background"),
    ],
)
def test_bad_fabric_choices_name_their_field(choice, field):
    with pytest.raises(FabricsimError) as err:
        api.simulate_train("llama3-8b", "dgx-h100", 16, 32, 2048, fidelity="flow", **choice)
    assert err.value.field == field
    if "topology" in choice:
        assert "spines" in str(err.value)


def test_fabric_choices_need_a_network_fidelity():
    with pytest.raises(FabricsimError) as err:
        api.simulate_train("llama3-8b", "dgx-h100", 16, 32, 2048, fidelity="simulate", placement="spread")
    assert err.value.field == "placement" and "--fidelity flow" in str(err.value)


def test_infer_runs_on_the_fabric_and_reports_it():
    out = api.simulate_infer(
        "llama3-70b", "dgx-h100", 16, input_len=1024, output_len=64, batch=8, tp=8, pp=2, fidelity="flow",
        placement="spread",
    ).to_json()
    assert out["tpot_s"] >= out["analytic_tpot_s"] * 0.99
    assert out["network"]["dimensions"]["pp"]["highest_tier"] in ("leaf", "spine")


def test_deepseek_v3_expert_all_to_all_is_slower_spread_than_packed_on_a_4_to_1_fabric():
    """EP 64 on 1,024 H100: packed keeps an expert group under two leaves, spread sends it across
    the spines of every leaf."""
    runs = {
        placement: api.simulate_train(
            "deepseek-v3", "dgx-h100", 1024, 1024, 4096, fidelity="flow", tp=4, pp=8, vpp=4, ep=64, expert_tp=1,
            topology=LEAF_SPINE.format(4), placement=placement,
        ).to_json()
        for placement in ("packed", "spread")
    }
    busy = {name: run["comm_busy_s"]["ep-all-to-all"] for name, run in runs.items()}
    assert busy["spread"] > 1.5 * busy["packed"]
    assert runs["spread"]["step_time_s"] > runs["packed"]["step_time_s"]


def _packet_step(gpus: int, nic: str, background: str | None) -> dict:
    return api.simulate_train(
        "llama3-8b", "dgx-h100", gpus, 64, 2048, fidelity="packet", tp=8, nic=nic, background=background
    ).to_json()


def test_roce_and_infiniband_agree_without_contention_and_differ_with_a_tenant_and_say_why():
    """Two DGX H100 under one leaf: nothing contends, RoCE and InfiniBand within 2%. Four nodes with
    another tenant's permutation at half the line rate: RoCE marks ECN (DCQCN), InfiniBand waits for
    credits, and the steps differ."""
    quiet = {nic: _packet_step(16, nic, None) for nic in ("ib-ndr", "roce-400")}
    assert quiet["roce-400"]["step_time_s"] == pytest.approx(quiet["ib-ndr"]["step_time_s"], rel=0.02)
    busy = {nic: _packet_step(32, nic, "permutation:0.5") for nic in ("ib-ndr", "roce-400")}
    roce, ib = busy["roce-400"]["network"], busy["ib-ndr"]["network"]
    assert roce["transport"] == "roce" and ib["transport"] == "infiniband"
    assert abs(busy["roce-400"]["step_time_s"] / busy["ib-ndr"]["step_time_s"] - 1) > 0.005
    assert roce["ecn_marked_fraction"] > 0 and roce["credit_stall_s"] == 0
    assert ib["credit_stall_s"] > 0 and ib["ecn_marked_fraction"] == 0
