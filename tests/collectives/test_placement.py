"""Placing groups on the tiers of catalog systems."""

import pytest

from fabricsim.catalog import load_system
from fabricsim.collectives import place_group
from fabricsim.errors import FabricsimError


@pytest.fixture(scope="module")
def h100():
    return load_system("dgx-h100")


def test_one_node_group(h100):
    g = place_group(h100, 8)
    assert (g.ranks, g.domains, g.ranks_per_domain) == (8, 1, 8)
    assert g.scale_up_Bps == pytest.approx(450e9)
    assert g.scale_up_p2p_Bps == pytest.approx(450e9 * 20.6 / 25)  # NCCL SM90_NVLINK_BW / nominal link
    assert g.nvls and not g.sharp_enabled and g.sharp_capable
    assert g.bottleneck_Bps == pytest.approx(450e9)
    assert g.generation == "hopper" and g.cpu_vendor == "intel"


def test_multi_node_and_strided_groups(h100):
    g = place_group(h100, 32)
    assert (g.domains, g.ranks_per_domain) == (4, 8)
    assert g.scale_out_Bps == pytest.approx(50e9)  # 8 NDR NICs / 8 GPUs
    assert g.bottleneck_Bps == pytest.approx(min(450e9, 8 * 50e9))
    dp = place_group(h100, 16, stride=8)
    assert (dp.domains, dp.ranks_per_domain) == (16, 1)
    assert dp.bottleneck_Bps == pytest.approx(50e9)
    tp_half = place_group(h100, 4, stride=2)
    assert (tp_half.domains, tp_half.ranks_per_domain) == (1, 4)


def test_nvl72_domain_spans_trays():
    g = place_group(load_system("gb200-nvl72"), 72)
    assert (g.domains, g.ranks_per_domain) == (1, 72)
    assert place_group(load_system("gb200-nvl72"), 144).domains == 2


def test_a100_has_no_nvls():
    g = place_group(load_system("dgx-a100"), 8)
    assert not g.nvls
    assert g.cpu_vendor == "amd"


def test_oversubscription_applies_beyond_one_leaf(h100):
    spec = h100.model_copy(update={"scale_out": h100.scale_out.model_copy(update={"oversubscription": 2.0})})
    near = place_group(spec, 16)
    far = place_group(spec, 8 * 64)  # 64 nodes > 32 per 64-port leaf
    assert not near.crosses_spine and near.scale_out_Bps == pytest.approx(50e9)
    assert far.crosses_spine and far.scale_out_Bps == pytest.approx(25e9)


def test_placement_is_cached(h100):
    assert place_group(h100, 64, 8) is place_group(h100, 64, 8)


@pytest.mark.parametrize(("ranks", "stride"), [(0, 1), (8, 0), (-1, 1), (True, 1), (1.5, 1)])
def test_bad_counts_raise(h100, ranks, stride):
    with pytest.raises(FabricsimError):
        place_group(h100, ranks, stride)


def test_group_larger_than_system_raises(h100):
    with pytest.raises(FabricsimError) as info:
        place_group(h100, 60_000, stride=8)
    assert info.value.field == "gpus"
