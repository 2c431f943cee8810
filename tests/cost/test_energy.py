"""Energy of train / infer / serve results and of bytes through the fabric."""

from __future__ import annotations

import itertools

import pytest

from fabricsim import api
from fabricsim.api.cost import load_cost_catalog
from fabricsim.cost.energy import cable_J_per_byte, per_token_J, run_energy_MWh, tokens_per_kWh


def test_train_result_carries_energy():
    result = api.train("llama3-8b", "dgx-h100", 64, 256, 4096).to_json()
    power = result["power_W"]
    assert set(power) == {"gpus", "hosts", "nics", "switches", "optics", "cooling", "total"}
    assert result["energy_J_per_step"] == pytest.approx(power["total"] * result["step_time_s"])
    assert result["energy_J_per_token"] == pytest.approx(result["energy_J_per_step"] / (256 * 4096))
    # 1 kWh = 1,000 W x 3,600 s
    assert result["tokens_per_kWh"] == pytest.approx(1_000 * 3_600 / result["energy_J_per_token"])
    # training draw: the measured fraction of nameplate (Latif et al.), not the nameplate
    nameplate = api.cost("dgx-h100", 64, load="max").power.total
    assert power["total"] < nameplate


def test_simulated_step_energy_uses_the_simulated_time():
    result = api.simulate_train("llama3-8b", "dgx-h100", 16, 32, 2048).to_json()
    assert result["energy_J_per_step"] == pytest.approx(result["power_W"]["total"] * result["step_time_s"])


def test_decode_energy_per_token_falls_as_batch_grows():
    joules = []
    for batch in (1, 4, 16, 64):
        result = api.infer("llama3-70b", "dgx-h100", 8, batch=batch, input_len=512, output_len=256).to_json()
        assert result["energy_J_per_token"] == pytest.approx(result["power_W"]["total"] / result["output_tokens_per_s"])
        assert result["idle_power_W"] < result["power_W"]["total"]
        joules.append(result["energy_J_per_token"])
    assert all(later < earlier for earlier, later in itertools.pairwise(joules))
    assert joules[0] / joules[-1] > 10  # batching amortises the weights read per step


def test_serve_result_carries_energy():
    result = api.serve(
        "llama3-8b", "dgx-h100", 8, arrival_rate=5.0, requests=20, input_len="256", output_len="64", seed=1, tp=8
    ).to_json()
    assert result["energy_J_per_token"] == pytest.approx(result["power_W"]["total"] / result["output_tokens_per_s"])


def test_per_token_helpers():
    assert per_token_J(1000.0, 0.0) is None and tokens_per_kWh(None) is None
    assert per_token_J(1000.0, 500.0) == 2.0


def test_energy_per_byte_of_a_cable():
    result = api.cost("dgx-h100", 1024)
    costs = load_cost_catalog()
    switch_W = costs.switches["quantum2-qm9700"].power_W
    per_byte = cable_J_per_byte(result.bom, costs, switch_W, 64)
    line_Bps = 400e9 / 8
    assert per_byte["access"] == pytest.approx((switch_W / 64 + 2 * 9.0) / (2 * line_Bps))
    assert per_byte["tier1-2"] == pytest.approx((2 * switch_W / 64 + 2 * 9.0) / (2 * line_Bps))
    assert dict(result.energy_J_per_byte) == pytest.approx(per_byte)


def test_run_energy_of_a_whole_run():
    """15T tokens at 1M tokens/s goodput on a 20 MW facility: 15e6 s x 20 MW = 83,333 MWh."""
    assert run_energy_MWh(20e6, 15e12, 1e6) == pytest.approx(83_333.33, rel=1e-6)
    with pytest.raises(ValueError):
        run_energy_MWh(1.0, 1.0, 0.0)


@pytest.mark.parametrize(("model", "gpus", "batch", "tp"), [("llama3-8b", 8, 64, 1), ("llama3-70b", 64, 128, 8)])
def test_energy_per_token_respects_the_flop_bound(model, gpus, batch, tp):
    """MFU <= 1, so J/token >= (P / GPUs) x model FLOPs per token / peak FLOP/s."""
    result = api.train(model, "dgx-h100", gpus, batch, 4096, tp=tp).to_json()
    flops_per_token = result["model_tflops_per_gpu"] * 1e12 * gpus / result["tokens_per_s"]
    bound = result["power_W"]["total"] / gpus * flops_per_token / 989.4e12
    assert result["energy_J_per_token"] >= bound
    assert result["energy_J_per_token"] * result["mfu"] == pytest.approx(bound, rel=1e-6)


def test_train_power_figures_read_a_power_once_and_copy_its_json():
    from fabricsim.api.cost import train_power
    from fabricsim.catalog import load_system
    from fabricsim.cost.energy import energy_J, train_power_figures

    power = train_power(load_system("dgx-h100"), 64)
    assert power is not None
    figures = train_power_figures(power)
    assert figures is train_power_figures(power) and figures[:2] == (power, power.total)  # read once, kept
    step_J, power_W, per_token, per_kWh = figures.energy(2.5, 256 * 4096)
    assert step_J == energy_J(power.total, 2.5)  # the same product, bit for bit
    assert per_token == step_J / (256 * 4096) and per_kWh == tokens_per_kWh(per_token)
    again = figures.energy(2.5, 256 * 4096)[1]
    assert power_W == again == power.to_json() and power_W is not again  # a new dict per result
