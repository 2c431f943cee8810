"""Offload choices parsed at the edge; memory tiers in system specs."""

import pytest

from fabricsim.catalog import load_system
from fabricsim.errors import FabricsimError
from fabricsim.specs.memory_tier import MemoryTierKind, OffloadClass, parse_offload


def test_parse_offload_canonical_order_and_tier() -> None:
    spec = parse_offload(" activations,Optimizer ,weights,optimizer", "GRACE")
    assert spec is not None
    assert spec.classes == (OffloadClass.OPTIMIZER, OffloadClass.WEIGHTS, OffloadClass.ACTIVATIONS)
    assert spec.tier is MemoryTierKind.GRACE
    assert parse_offload(["weights"]).tier is MemoryTierKind.HOST
    assert parse_offload(None) is None and parse_offload("none") is None and parse_offload(" None ") is None


@pytest.mark.parametrize(
    ("classes", "tier", "field", "hint"),
    [
        ("optimiser", None, "offload", "optimizer"),
        ("", None, "offload", "empty entry"),
        ("weights,,optimizer", None, "offload", "empty entry"),
        ("none", "host", "offload-tier", "none"),
        ("weights", "dram", "offload-tier", "host"),
        (None, "host", "offload-tier", "--offload"),
    ],
)
def test_parse_offload_errors_name_the_field(classes, tier, field, hint) -> None:
    with pytest.raises(FabricsimError) as error:
        parse_offload(classes, tier)
    assert error.value.field == field and hint in str(error.value)


def test_systems_know_their_tiers() -> None:
    assert load_system("gh200").memory_tier(MemoryTierKind.GRACE).capacity_per_gpu_bytes == 480e9
    gb200 = load_system("gb200-nvl72").memory_tier(MemoryTierKind.GRACE)
    assert gb200.link.name == "nvlink-c2c" and gb200.gpus == 2
    for name, link in (("dgx-a100", "pcie-gen4"), ("dgx-h100", "pcie-gen5"), ("dgx-b200", "pcie-gen5")):
        host = load_system(name).memory_tier(MemoryTierKind.HOST)
        assert host.link.name == link and host.capacity_bytes >= 1e12
    with pytest.raises(FabricsimError) as error:
        load_system("dgx-h100").memory_tier(MemoryTierKind.CXL)
    assert error.value.field == "offload-tier" and "has: host" in str(error.value)


def test_a_cxl_pool_attaches_in_a_system_yaml(tmp_path) -> None:
    from fabricsim import catalog

    text = (catalog.data_root() / "systems" / "dgx-h100.yaml").read_text(encoding="utf-8")
    text += (
        "  cxl:\n"
        "    capacity_bytes: {value: 4.0e+12, source: test}\n"
        "    memory_bandwidth_Bps: {value: 256.0e+9, source: test}\n"
        "    gpus: {value: 16, source: test}\n"
        "    link: cxl2\n"
        "    gpus_per_link: {value: 2, source: test}\n"
    )
    path = tmp_path / "pooled.yaml"
    path.write_text(text, encoding="utf-8")
    pool = catalog.load_system(str(path)).memory_tier(MemoryTierKind.CXL)
    assert pool.capacity_per_gpu_bytes == 250e9 and pool.link_bandwidth_per_gpu_Bps == 32e9
