"""The catalog: provenance of every number, exact-name lookup, files instead of names, bad files."""

import json
from pathlib import Path

import pytest
import yaml

from fabricsim import catalog
from fabricsim.errors import FabricsimError

DATA = catalog.data_root()
YAML_FILES = sorted(DATA.rglob("*.yaml"))


def unsourced_numbers(node, path=""):
    """Dotted paths of numeric leaves that are not inside a {value, source} mapping."""
    if isinstance(node, dict):
        if "value" in node and "source" in node:
            return []
        found = []
        for key, value in node.items():
            found += unsourced_numbers(value, f"{path}.{key}" if path else str(key))
        return found
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in unsourced_numbers(v, f"{path}[{i}]")]
    if isinstance(node, (int, float)) and not isinstance(node, bool):
        return [path]
    return []


def test_catalog_has_the_design_names():
    assert {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "h800"} <= set(catalog.names("systems"))
    models = {"gpt3-175b", "megatron-1t", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x22b", "deepseek-v3"}
    assert models <= set(catalog.names("models"))
    assert len(YAML_FILES) > 30


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_number_has_a_source(path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and data.get("source"):
        return  # a file transcribed from one document (e.g. a model's config.json)
    assert unsourced_numbers(data) == []
    for wrapped in _wrapped(data):
        assert str(wrapped["source"]).strip(), f"empty source in {path}"


def _wrapped(node):
    if isinstance(node, dict):
        if "value" in node and "source" in node:
            yield node
            return
        for value in node.values():
            yield from _wrapped(value)
    elif isinstance(node, list):
        for value in node:
            yield from _wrapped(value)


@pytest.mark.parametrize("kind", catalog.KINDS)
def test_every_item_loads(kind):
    for name in catalog.names(kind):
        item = catalog.describe(kind, name)
        assert item["name"] == name
        assert item["sources"], f"{kind}/{name} lists no sources"


def test_sources_are_kept_by_field():
    h100 = catalog.load_device("h100-sxm")
    assert "NVLink4" in h100.sources["nvlink_bandwidth_Bps"]
    assert h100.nvlink_bandwidth_Bps == 450e9


@pytest.mark.parametrize(
    ("loader", "typo", "expected"),
    [
        (catalog.load_system, "dgx-h10", "dgx-h100"),
        (catalog.load_model, "llama3-7b", "llama3-70b"),
        (catalog.load_device, "h100", "h100-sxm"),
        (catalog.load_link, "nvlink", "nvlink4"),
        (catalog.load_switch, "nvswitch-gen", "nvswitch-gen3"),
    ],
)
def test_unknown_names_suggest_close_matches(loader, typo, expected):
    with pytest.raises(FabricsimError) as info:
        loader(typo)
    assert expected in str(info.value)
    assert "did you mean" in str(info.value)


def test_unknown_kind():
    with pytest.raises(FabricsimError) as info:
        catalog.describe("gpus", "h100-sxm")
    assert info.value.field == "kind"


def test_a_file_works_instead_of_a_name(tmp_path: Path):
    source = DATA / "systems" / "dgx-h100.yaml"
    copy = tmp_path / "my-cluster.yaml"
    copy.write_text(source.read_text(encoding="utf-8").replace("name: dgx-h100", "name: my-cluster"), encoding="utf-8")
    spec = catalog.load_system(str(copy))
    assert spec.name == "my-cluster" and spec.gpus_per_node == 8


def test_malformed_yaml_is_a_user_error(tmp_path: Path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: x\ngpus_per_node: [1, 2\n", encoding="utf-8")
    with pytest.raises(FabricsimError) as info:
        catalog.load_system(str(bad))
    assert info.value.field == "system" and "malformed YAML" in str(info.value) and "line" in str(info.value)


def test_yaml_that_is_not_a_mapping(tmp_path: Path):
    bad = tmp_path / "list.yaml"
    bad.write_text("- 1\n- 2\n", encoding="utf-8")
    with pytest.raises(FabricsimError, match="mapping"):
        catalog.load_device(str(bad))


def test_yaml_with_a_bad_field_names_it(tmp_path: Path):
    source = (DATA / "devices" / "h100-sxm.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "gpu.yaml"
    bad.write_text(source.replace("tdp_w:", "tdp_watts:"), encoding="utf-8")
    with pytest.raises(FabricsimError) as info:
        catalog.load_device(str(bad))
    assert "tdp" in str(info.value)


def test_missing_file_is_a_user_error(tmp_path: Path):
    with pytest.raises(FabricsimError, match="not found"):
        catalog.load_model(str(tmp_path / "nope.json"))


def test_hugging_face_config_json(tmp_path: Path):
    config = {
        "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 14336, "vocab_size": 128256, "hidden_act": "silu", "rope_theta": 500000.0,
        "torch_dtype": "bfloat16",
    }
    path = tmp_path / "llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config), encoding="utf-8")
    model = catalog.load_model(str(path))
    assert model.name == "llama" and model.gated_mlp and model.kv_heads == 8


@pytest.mark.parametrize(
    "text",
    ['{"hidden_size": 4096,', "[1, 2, 3]", '{"hidden_size": "big", "num_hidden_layers": 2}', '{"vocab_size": 10}'],
)
def test_bad_config_json_is_a_user_error(tmp_path: Path, text):
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FabricsimError) as info:
        catalog.load_model(str(path))
    assert info.value.field == "model"
    assert "\n" not in str(info.value)
