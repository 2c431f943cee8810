"""The fabric loop keeps the scale-out fabric's traffic out of the scale-up domain: a ``--background``
tenant slows the collectives that cross nodes, never the TP collectives inside one (its flows run
between domains), and the NIC's ``--transport`` does not time NVLink traffic (network/phase.py)."""

from __future__ import annotations

import pytest

from fabricsim import api
from fabricsim.errors import FabricsimError


def _busy(gpus: int = 16, pp: int = 1, background: str | None = None, transport: str | None = None) -> dict:
    # DGX H100 nodes, tp 8: the TP groups are the nodes (NVSwitch), DP or PP crosses the NICs
    result = api.simulate_train(
        "llama3-8b", "dgx-h100", gpus, 16, 1024, fidelity="packet", tp=8, pp=pp, nic="roce-400",
        background=background, transport=transport,
    ).to_json()  # fmt: skip
    return result["comm_busy_s"]


TP = ("tp-all-gather", "tp-reduce-scatter")


def test_a_background_tenant_slows_the_dp_all_reduce_across_nodes_but_not_the_tp_collectives_inside():
    quiet, loaded = _busy(), _busy(background="permutation:1")
    for kind in TP:
        assert loaded[kind] == pytest.approx(quiet[kind], rel=1e-12), kind  # the fixed point's rounding
    assert loaded["dp-all-reduce"] > 1.5 * quiet["dp-all-reduce"]  # the tenant takes half of every NIC


@pytest.mark.parametrize("background", [None, "permutation:0.5"])
def test_tp_collectives_inside_a_node_take_the_same_time_under_every_transport(background):
    busy = {name: _busy(pp=2, background=background, transport=name) for name in ("ib", "roce", "uet")}
    for kind in TP:
        assert busy["roce"][kind] == pytest.approx(busy["ib"][kind], rel=1e-12), kind
        assert busy["uet"][kind] == pytest.approx(busy["ib"][kind], rel=1e-12), kind


def test_a_background_on_a_job_inside_one_node_is_refused_naming_background():
    with pytest.raises(FabricsimError) as caught:
        _busy(gpus=8, background="permutation:0.5")
    assert caught.value.field == "background" and "\n" not in str(caught.value)
