"""User files in and out: regular files only, no parent creation, no traceback (issue 15 regressions)."""

import os
import stat

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.textfile import check_output_path, parse_yaml, read_text, write_atomic


@pytest.mark.parametrize("path", ["", "   ", "/proc/fabricsim-test", "/dev/full", "/dev/null", "/tmp"])
def test_output_path_refuses_what_is_not_a_new_or_regular_file(path):
    with pytest.raises(FabricsimError) as info:
        write_atomic(path, "x", "trace")
    assert info.value.field == "trace"


def test_device_node_is_never_replaced():
    before = os.stat("/dev/null")
    with pytest.raises(FabricsimError):
        write_atomic("/dev/null", "x", "trace")
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_missing_parent_is_not_created(tmp_path):
    target = tmp_path / "missing" / "out.json"
    with pytest.raises(FabricsimError, match="does not exist"):
        check_output_path(target, "trace")
    assert not (tmp_path / "missing").exists()


def test_symlink_is_not_replaced(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("keep")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(FabricsimError, match="not a regular file"):
        write_atomic(link, "x", "trace")
    assert link.is_symlink() and real.read_text() == "keep"


def test_regular_file_is_replaced_whole(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomic(target, "new", "trace")
    assert target.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_read_refuses_directories_devices_and_non_utf8(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"a: \xff\xfe\n")
    for path, text in ((tmp_path, "a directory"), ("/dev/zero", "not a regular file"), (bad, "not UTF-8"),
                       (tmp_path / "none.yaml", "cannot read"), ("", "empty")):
        with pytest.raises(FabricsimError, match=text):
            read_text(path, "model")


def test_yaml_alias_bomb_is_refused_quickly():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    )
    with pytest.raises(FabricsimError, match="aliases are not accepted"):
        parse_yaml(bomb, "spec")


def test_input_size_cap_names_the_variable(tmp_path, monkeypatch):
    big = tmp_path / "big.yaml"
    big.write_text("a: 1\n" * 100)
    monkeypatch.setenv("FABRICSIM_MAX_INPUT_BYTES", "10")
    with pytest.raises(FabricsimError, match="FABRICSIM_MAX_INPUT_BYTES"):
        read_text(big, "spec")


# Issue 29: shipped YAML is read from a parsed cache (JSON) kept where Python keeps bytecode.


@pytest.fixture
def shipped_cache(tmp_path, monkeypatch):
    """A shipped-looking YAML file, with the parsed cache under a temporary ``sys.pycache_prefix``
    and cache writes allowed (the test environment may forbid bytecode writes)."""
    import sys

    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "prefix"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "data" / "item.yaml"
    path.parent.mkdir()
    path.write_text("name: a\nvalues: [1, 2.5, true, null]\nnested: {x: 1}\n")
    return path


def _no_parse(text):
    raise AssertionError("the YAML was parsed: the cache was not used")


def test_shipped_yaml_is_read_back_from_its_parsed_cache(shipped_cache, monkeypatch):
    from fabricsim import textfile

    expected = {"name": "a", "values": [1, 2.5, True, None], "nested": {"x": 1}}
    assert textfile.load_shipped_yaml(shipped_cache) == expected
    cache = textfile.parsed_cache_path(shipped_cache)
    assert cache.is_file() and str(cache).startswith(str(shipped_cache.parent.parent / "prefix"))
    monkeypatch.setattr(textfile, "_parse_shipped", _no_parse)
    again = textfile.load_shipped_yaml(str(shipped_cache))
    assert repr(again) == repr(expected)  # same types: 1 stays an int, 2.5 a float
    assert again is not textfile.load_shipped_yaml(shipped_cache)  # a fresh object per call, as parsing gives


def test_a_changed_text_misses_the_cache_whatever_its_modification_time(shipped_cache):
    from fabricsim import textfile

    textfile.load_shipped_yaml(shipped_cache)
    stamp = os.stat(shipped_cache)
    shipped_cache.write_text("name: b\nvalues: [1, 2.5, true, null]\nnested: {x: 1}\n")  # same size
    os.utime(shipped_cache, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # same modification time
    assert textfile.load_shipped_yaml(shipped_cache)["name"] == "b"


def test_an_unreadable_cache_is_parsed_again_and_rewritten(shipped_cache):
    from fabricsim import textfile

    cache = textfile.parsed_cache_path(shipped_cache)
    textfile.load_shipped_yaml(shipped_cache)
    for broken in ("{not json", '{"blake2b": "00", "value": 1}', "[1, 2]", '{"blake2b": 3}'):
        cache.write_text(broken)
        assert textfile.load_shipped_yaml(shipped_cache)["name"] == "a", broken
        assert cache.read_text() != broken


def test_no_cache_is_written_where_python_writes_no_bytecode(shipped_cache, monkeypatch):
    import sys

    from fabricsim import textfile

    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert textfile.load_shipped_yaml(shipped_cache)["name"] == "a"
    assert not textfile.parsed_cache_path(shipped_cache).exists()


def test_values_json_cannot_give_back_are_never_cached(shipped_cache):
    from datetime import date

    from fabricsim import textfile

    for text, value in (("day: 2024-01-02\n", {"day": date(2024, 1, 2)}), ("1: one\n", {1: "one"}),
                        ("x: .inf\n", {"x": float("inf")})):
        shipped_cache.write_text(text)
        assert textfile.load_shipped_yaml(shipped_cache) == value
        assert not textfile.parsed_cache_path(shipped_cache).exists(), text


def test_without_a_prefix_the_cache_sits_in_pycache_next_to_the_file(tmp_path, monkeypatch):
    import sys

    from fabricsim import textfile

    monkeypatch.setattr(sys, "pycache_prefix", None)
    path = tmp_path / "item.yaml"
    assert textfile.parsed_cache_path(path) == tmp_path / "__pycache__" / "item.yaml.parsed.json"


def test_an_unwritable_cache_folder_is_skipped_silently(shipped_cache, monkeypatch):
    import sys

    from fabricsim import textfile

    blocker = shipped_cache.parent / "blocker"
    blocker.write_text("")  # a file where the cache's folder would be
    monkeypatch.setattr(sys, "pycache_prefix", str(blocker))
    assert textfile.load_shipped_yaml(shipped_cache)["name"] == "a"
