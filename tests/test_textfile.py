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
