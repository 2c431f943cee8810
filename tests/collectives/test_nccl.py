"""The versioned NCCL constants file."""

import pytest

from fabricsim.collectives.nccl import DEFAULT_VERSION, available_versions, constants
from fabricsim.errors import FabricsimError


def test_constants_load_with_si_units():
    nccl = constants()
    assert nccl.version == "2.30.7"
    assert nccl.base_latency_s["ring"]["Simple"] == pytest.approx(8.4e-6)
    assert nccl.hw_latency_s["nvlink"]["nvls"]["Simple"] == pytest.approx(25e-6)
    assert nccl.hw_latency_s["net"]["tree"]["LL"] == pytest.approx(5e-6)
    assert nccl.ll_max_single_node_Bps["hopper"] == pytest.approx(141e9)
    assert nccl.ll_max_multi_node_Bps["amd"]["two_nodes"] == pytest.approx(22.5e9)
    assert nccl.nvls_efficiency["hopper"] == 0.85
    assert nccl.nvlink_link_Bps["hopper"] == pytest.approx(20.6e9)
    assert nccl.nvls_chunk_bytes == (16384, 32768, 65536, 131072)
    assert constants() is nccl


def test_tree_correction_interpolates_between_powers_of_two():
    nccl = constants()
    at = 64 * 2**11  # index 11
    assert nccl.tree_correction_factor("Simple", at) == pytest.approx(0.5)
    assert nccl.tree_correction_factor("Simple", at * 2**0.5) == pytest.approx(0.5)
    assert nccl.tree_correction_factor("LL", 64 * 2**12.5) == pytest.approx(0.4)
    assert nccl.tree_correction_factor("LL", 64 * 2**13.5) == pytest.approx(0.45)
    assert nccl.tree_correction_factor("LL128", 1.0) == 1.0
    assert nccl.tree_correction_factor("Simple", 2.0**60) == pytest.approx(0.9)


def test_unknown_version_is_a_user_error():
    with pytest.raises(FabricsimError) as info:
        constants("1.0")
    assert info.value.field == "nccl_version"


def test_per_channel_caps_are_transcribed():
    nccl = constants()
    assert nccl.per_channel_cap_Bps("tree", "blackwell", 3) == pytest.approx(24e9)
    assert nccl.per_channel_cap_Bps("tree", "hopper", 2) == pytest.approx(41.4e9)
    assert nccl.per_channel_cap_Bps("ring_ll128", "hopper", 1) == pytest.approx(36.7e9)
    assert nccl.per_channel_cap_Bps("tree_ll128", "blackwell", 2) == pytest.approx(31.67e9)
    assert nccl.per_channel_cap_Bps("nvls_tree", "hopper", 8) == pytest.approx(45.5e9)


def test_versions_come_from_file_names():
    assert available_versions() == ("2.30",) and DEFAULT_VERSION in available_versions()
    with pytest.raises(FabricsimError) as info:
        constants("2.21")
    assert "2.30" in info.value.fix


def test_ring_plateau_and_collnet_serialization_are_nccls() -> None:
    """Transcribed from NCCL 2.30.7 src/graph/tuning.cc (ncclTopoGetAlgoTime): a multi-node Ring
    Simple all-reduce whose per-channel, per-rank chunk is >= 64 B pays its latency x1.4 on sm80+
    (x1.9 before); CollNet serialises 0.4 us per extra local rank. The ring candidate of a 2-node
    H100 all-reduce carries exactly that factor and threshold."""
    from fabricsim.catalog import load_system
    from fabricsim.collectives import CollectiveOp
    from fabricsim.collectives.algorithms import ring
    from fabricsim.collectives.candidate import Shape
    from fabricsim.collectives.ops import Protocol
    from fabricsim.collectives.placement import place_group

    nccl = constants()
    assert (nccl.ring_plateau_factor_sm80, nccl.ring_plateau_factor_older) == (1.4, 1.9)
    assert nccl.collnet_arity_serialization_s == pytest.approx(0.4e-6)
    group = place_group(load_system("dgx-h100"), 16)
    simple = next(c for c in ring(CollectiveOp.ALL_REDUCE, group, nccl) if c.protocol is Protocol.SIMPLE)
    assert simple.shape is Shape.RING_PLATEAU and simple.plateau_factor == 1.4
    assert simple.plateau_bytes == 64.0 * 16 * group.channels
