"""Frozen specs: validation, derived properties, immutability."""

import pytest
from pydantic import ValidationError

from fabricsim.catalog import load_device, load_model, load_system
from fabricsim.errors import FabricsimError
from fabricsim.specs import Dtype, ModelSpec, ParallelLayout, Recompute
from fabricsim.specs.layout import long_names


@pytest.fixture(scope="module")
def h100():
    return load_system("dgx-h100")


@pytest.mark.parametrize("gpus", [1, 2, 4, 8, 16, 1024, 100_000])
def test_allowed_gpu_counts(h100, gpus):
    h100.check_gpu_count(gpus)


@pytest.mark.parametrize("gpus", [0, -8, 3, 12, 100_008, True, 8.0, "8"])
def test_rejected_gpu_counts(h100, gpus):
    with pytest.raises(FabricsimError) as info:
        h100.check_gpu_count(gpus)
    assert info.value.field == "gpus"


def test_nodes(h100):
    assert h100.nodes(1) == 1 and h100.nodes(8) == 1 and h100.nodes(9) == 2 and h100.nodes(64) == 8


def test_system_tiers(h100):
    assert h100.scale_up.in_network_reduction
    assert h100.scale_out.bandwidth_per_node_Bps == pytest.approx(8 * 50e9)
    assert not load_system("dgx-a100").scale_up.in_network_reduction


def test_specs_are_frozen(h100):
    with pytest.raises(ValidationError):
        h100.gpus_per_node = 4


def test_domain_must_hold_whole_nodes(h100):
    data = h100.model_dump()
    data["scale_up"]["domain_gpus"] = 12
    with pytest.raises(ValidationError, match="multiple of gpus_per_node"):
        type(h100).model_validate(data)


def test_unknown_keys_are_rejected():
    with pytest.raises(ValidationError):
        ModelSpec(name="x", hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8,
                  vocab_size=10, colour="red")


def test_device_peak_falls_back_to_a_wider_format():
    a100 = load_device("a100-80gb")
    assert a100.peak("fp8") == a100.peak_flops[Dtype.BF16]  # A100 has no FP8 tensor cores
    assert load_device("h100-sxm").peak(Dtype.FP4) == pytest.approx(1978.9e12)
    assert load_device("b200").peak("fp4") == pytest.approx(9000e12)


def test_model_properties():
    llama = load_model("llama3-70b")
    assert llama.gated_mlp and not llama.is_moe and llama.kv_heads == 8 and llama.head_size == 128
    deepseek = load_model("deepseek-v3")
    assert deepseek.is_moe and deepseek.is_mla
    assert deepseek.num_moe_layers + deepseek.num_dense_layers == deepseek.num_hidden_layers


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"num_key_value_heads": 3}, "multiple of num_key_value_heads"),
        ({"num_local_experts": 4, "num_experts_per_tok": 5}, "num_experts_per_tok"),
        ({"first_k_dense_replace": 9}, "first_k_dense_replace"),
    ],
)
def test_model_consistency_checks(extra, message):
    base = {"name": "m", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 8,
            "intermediate_size": 128, "vocab_size": 100}
    with pytest.raises(ValidationError, match=message):
        ModelSpec(**base, **extra)


def test_moe_alias_n_routed_experts():
    spec = ModelSpec(name="m", hidden_size=64, num_hidden_layers=2, num_attention_heads=8, intermediate_size=128,
                     vocab_size=100, n_routed_experts=8, num_experts_per_tok=2)
    assert spec.num_local_experts == 8


def test_parallel_layout():
    layout = ParallelLayout(tensor_parallel=8, pipeline_parallel=4, data_parallel=2, recompute=Recompute.FULL)
    assert layout.gpus == 64
    view = layout.as_dict()
    assert (view["tp"], view["pp"], view["dp"], view["recompute"]) == (8, 4, 2, "full")
    assert ParallelLayout(**long_names(view)) == layout  # one short<->long name map, both ways

