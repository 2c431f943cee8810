"""A catalog item given as a user's file is re-read after the file changes, in the same process
(issue 27: the loaders were cached by the name-or-path string, so a notebook, ``api.*`` in a loop or
a sweep worker kept the first version of an edited model YAML or config.json and gave the old
answer). Every rewrite bumps the mtime explicitly, so no test passes by the clock's luck."""

import json
import os

import pytest

from fabricsim import api, catalog
from fabricsim.errors import FabricsimError

SHIPPED_MODEL = (catalog.data_root() / "models" / "llama3-8b.yaml").read_text()



def test_an_edited_model_yaml_is_read_again(tmp_path, rewrite_file) -> None:
    path = tmp_path / "model.yaml"
    rewrite_file(path, SHIPPED_MODEL)
    assert catalog.load_model(str(path)).hidden_size == 4096
    rewrite_file(path, SHIPPED_MODEL.replace("hidden_size: 4096", "hidden_size: 5120"))
    assert catalog.load_model(str(path)).hidden_size == 5120


def test_an_unchanged_user_file_is_served_from_the_cache(tmp_path, rewrite_file) -> None:
    path = tmp_path / "model.yaml"
    rewrite_file(path, SHIPPED_MODEL)
    assert catalog.load_model(str(path)) is catalog.load_model(str(path))


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path, rewrite_file) -> None:
    """Same size, mtime put back: the change time, which utime cannot set back, still moves."""
    path = tmp_path / "model.yaml"
    rewrite_file(path, SHIPPED_MODEL)
    assert catalog.load_model(str(path)).hidden_size == 4096
    mtime, ctime = path.stat().st_mtime_ns, path.stat().st_ctime_ns
    while path.stat().st_ctime_ns == ctime:  # a coarse clock: write again until the change time moves
        path.write_text(SHIPPED_MODEL.replace("hidden_size: 4096", "hidden_size: 4097"))
        os.utime(path, ns=(mtime, mtime))
    assert catalog.load_model(str(path)).hidden_size == 4097


def test_an_edited_config_json_is_read_again(tmp_path, rewrite_file) -> None:
    folder = tmp_path / "my-model"
    folder.mkdir()
    path = folder / "config.json"
    config = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "intermediate_size": 14336, "vocab_size": 128256, "hidden_act": "silu"}
    rewrite_file(path, json.dumps(config))
    assert catalog.load_model(str(path)).num_hidden_layers == 32
    rewrite_file(path, json.dumps({**config, "num_hidden_layers": 40}))
    assert catalog.load_model(str(path)).num_hidden_layers == 40


def test_a_system_yaml_sees_an_edit_of_the_device_file_it_names(tmp_path, rewrite_file) -> None:
    device = tmp_path / "gpu.yaml"
    text = (catalog.data_root() / "devices" / "h100-sxm.yaml").read_text()
    rewrite_file(device, text)
    system = tmp_path / "system.yaml"
    shipped = (catalog.data_root() / "systems" / "dgx-h100.yaml").read_text()
    rewrite_file(system, shipped.replace("device: h100-sxm", f"device: {device}"))
    assert catalog.load_system(str(system)).device.hbm_capacity_bytes == 80e9
    rewrite_file(device, text.replace("hbm_capacity_bytes: {value: 80.0e+9", "hbm_capacity_bytes: {value: 96.0e+9"))
    assert catalog.load_system(str(system)).device.hbm_capacity_bytes == 96e9


def test_the_same_relative_name_in_another_folder_is_another_file(tmp_path, monkeypatch, rewrite_file) -> None:
    for name, hidden in (("a", 4096), ("b", 5120)):
        (tmp_path / name).mkdir()
        text = SHIPPED_MODEL.replace("hidden_size: 4096", f"hidden_size: {hidden}")
        rewrite_file(tmp_path / name / "model.yaml", text)
    monkeypatch.chdir(tmp_path / "a")
    assert catalog.load_model("model.yaml").hidden_size == 4096
    monkeypatch.chdir(tmp_path / "b")
    assert catalog.load_model("model.yaml").hidden_size == 5120


def test_catalog_names_stay_cached_and_cache_clear_empties_both(tmp_path, rewrite_file) -> None:
    assert catalog.load_model("llama3-8b") is catalog.load_model("llama3-8b")
    path = tmp_path / "model.yaml"
    rewrite_file(path, SHIPPED_MODEL)
    named, filed = catalog.load_model("llama3-8b"), catalog.load_model(str(path))
    catalog.load_model.cache_clear()
    assert catalog.load_model("llama3-8b") is not named
    assert catalog.load_model(str(path)) is not filed
    assert catalog.load_model("llama3-8b") == named


def test_api_train_reads_the_edited_model(tmp_path, rewrite_file) -> None:
    path = tmp_path / "model.yaml"
    rewrite_file(path, SHIPPED_MODEL)
    args = {"system": "dgx-h100", "gpus": 8, "global_batch": 64, "seq_len": 4096}
    before = api.train(model=str(path), **args)
    rewrite_file(path, SHIPPED_MODEL.replace("num_hidden_layers: 32", "num_hidden_layers: 40"))
    after = api.train(model=str(path), **args)
    assert after.step_time_s > before.step_time_s * 1.2
    assert after.step_time_s == pytest.approx(api.train(model=str(path), **args).step_time_s, rel=0)


def test_a_pool_file_is_read_again_and_its_error_names_the_option(tmp_path, rewrite_file) -> None:
    """``load_pool`` takes the option that chose it; the cache keys on it (an error names it)."""
    path = tmp_path / "pool.yaml"
    text = (catalog.data_root() / "pools" / "cxl-pool-cmm-b.yaml").read_text()
    rewrite_file(path, text)
    assert catalog.load_pool(str(path), "kv-pool").hosts == 3
    rewrite_file(path, text.replace("hosts: {value: 3,", "hosts: {value: 4,"))
    assert catalog.load_pool(str(path), field="kv-pool").hosts == 4
    assert catalog.load_pool(str(path)).hosts == 4
    rewrite_file(path, text.replace("link: cxl2", "link: 7"))
    with pytest.raises(FabricsimError) as refused:
        catalog.load_pool(str(path), "kv-pool")
    assert refused.value.field == "kv-pool"


def test_loaded_gives_a_catalog_names_spec_and_never_a_user_files(tmp_path, rewrite_file) -> None:
    catalog.load_model.cache_clear()
    assert catalog.load_model.loaded("llama3-8b") is None  # not loaded yet
    named = catalog.load_model("llama3-8b")
    assert catalog.load_model.loaded("llama3-8b") is named
    path = tmp_path / "model.yaml"
    rewrite_file(path, SHIPPED_MODEL)
    catalog.load_model(str(path))
    assert catalog.load_model.loaded(str(path)) is None  # a user file is checked for edits on each load
    catalog.load_model.cache_clear()
    assert catalog.load_model.loaded("llama3-8b") is None
    assert catalog.load_system.loaded("dgx-h100") is catalog.load_system("dgx-h100")  # every cached loader has it
