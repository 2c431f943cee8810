"""Every YAML file shipped with the package parses to the same objects with libyaml's loader as with
the pure-Python safe loader (issue 27: the NCCL constants and the cost catalog are read with the C
loader, a third of a one-off train's parsing time)."""

from pathlib import Path

import pytest
import yaml

import fabricsim

SHIPPED = sorted(Path(fabricsim.__file__).parent.rglob("*.yaml"))


@pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML built without libyaml")
def test_libyaml_reads_every_shipped_file_as_the_safe_loader() -> None:
    assert len(SHIPPED) > 20
    for path in SHIPPED:
        text = path.read_text(encoding="utf-8")
        assert repr(yaml.load(text, Loader=yaml.CSafeLoader)) == repr(yaml.load(text, Loader=yaml.SafeLoader)), path


def test_catalog_names_use_the_fast_loader_and_user_files_keep_the_guards(tmp_path, monkeypatch) -> None:
    """A catalog item looked up by name is parsed by ``load_shipped_yaml`` (libyaml); the same file
    given as a path is a user file: the guarded parser, which refuses aliases."""
    from fabricsim import catalog, textfile
    from fabricsim.errors import FabricsimError

    used: list[str] = []
    shipped = textfile.load_shipped_yaml
    monkeypatch.setattr(textfile, "load_shipped_yaml", lambda path: used.append(str(path)) or shipped(path))
    catalog.load_switch.cache_clear()
    try:
        assert catalog.load_switch("nvswitch-gen2").name == "nvswitch-gen2"
    finally:
        catalog.load_switch.cache_clear()
    assert [Path(p).name for p in used] == ["nvswitch-gen2.yaml"]

    copy = tmp_path / "switch.yaml"
    copy.write_text((catalog.data_root() / "switches" / "nvswitch-gen2.yaml").read_text() + "x: &a 1\ny: *a\n")
    with pytest.raises(FabricsimError, match="alias"):
        catalog.load_switch(str(copy))
    assert len(used) == 1


def test_every_shipped_file_reads_back_from_its_parsed_cache_as_parsed(tmp_path, monkeypatch):
    """Issue 29: the parsed cache (textfile.load_shipped_yaml) gives every shipped file's objects
    exactly as the YAML loader does (same repr: types, key order), or holds no cache for it."""
    import sys

    from fabricsim import textfile

    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cached = 0
    for path in SHIPPED:
        parsed = repr(yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
        assert repr(textfile.load_shipped_yaml(path)) == parsed, path  # parses and fills the cache
        cached += textfile.parsed_cache_path(path).is_file()
        assert repr(textfile.load_shipped_yaml(path)) == parsed, path  # from the cache
    assert cached == len(SHIPPED)  # every shipped file is plain JSON data today
