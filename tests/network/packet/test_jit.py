"""The packet kernel's numba cache: a folder per version of the package's sources, and a fallback
when no folder is writable (issue 27)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fabricsim.network.packet import jit


@pytest.fixture()
def fresh_choice():
    """Forget the process's cache-folder choice before and after a test that changes the candidates."""
    jit.cache_dir.cache_clear()
    yield
    jit.cache_dir.cache_clear()


def _compiled_modules() -> list[Path]:
    return [p for p in sorted(jit.PACKAGE_DIR.glob("*.py")) if "@njit" in p.read_text()]


def test_every_compiled_packet_module_declares_through_jit():
    """numba's own njit would cache by the file's timestamp only (stale inlined helpers)."""
    modules = _compiled_modules()
    assert {p.name for p in modules} >= {"heap.py", "kernel.py", "loop.py", "reaction.py"}
    for path in modules:
        text = path.read_text()
        assert "from fabricsim.network.packet.jit import njit" in text, path.name
        assert not re.search(r"^from numba import .*\bnjit\b|^import numba", text, re.MULTILINE), path.name


def test_an_edit_of_any_packet_module_moves_the_cache_to_a_new_folder(tmp_path):
    copy = tmp_path / "packet"
    shutil.copytree(jit.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    original = jit.source_key(copy)
    assert original == jit.source_key()
    seen = {original}
    for path in sorted(copy.glob("*.py")):  # every module: a numba one, or a constant it freezes (layout)
        text = path.read_text()
        path.write_text(text.replace("return", "return ", 1) if "return" in text else text + "\n# edited\n")
        key = jit.source_key(copy)
        assert key not in seen, path.name
        seen.add(key)
        path.write_text(text)
    assert jit.source_key(copy) == original


def test_the_kernel_caches_in_the_folder_of_its_source_key():
    from numba.core import config

    from fabricsim.network.packet import heap, loop

    folder = jit.cache_dir()
    assert folder is not None and folder.name.endswith(jit.source_key())
    for dispatcher in (loop.run, heap.grown):
        assert dispatcher._cache._cache_path.startswith(str(folder))  # numba's cache locator of the function
    assert str(folder) not in str(config.CACHE_DIR or "")  # set only while declaring: others keep theirs


def test_no_writable_folder_compiles_uncached_after_one_notice(tmp_path, monkeypatch, capsys, fresh_choice):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(jit, "candidates", lambda key: [blocker / "numba", blocker / "tmp" / key])
    assert jit.cache_dir() is None

    @jit.njit(cache=True)
    def add(a, b):
        return a + b

    assert add(2, 3) == 5  # numba's cache=True would raise "cannot cache function" at declaration
    jit.cache_dir()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fabricsim: no writable folder for numba's cache")


def test_the_temporary_folder_is_the_last_resort_and_must_be_private(tmp_path, monkeypatch, capsys, fresh_choice):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    shared = tmp_path / "tmp" / "fabricsim-numba-x" / "key"
    monkeypatch.setattr(jit, "candidates", lambda key: [blocker / "numba", shared])
    assert jit.cache_dir() == shared
    assert capsys.readouterr().err.startswith(f"fabricsim: numba cache in {shared} (no writable cache folder")
    shared.parent.chmod(0o777)  # another user could plant machine code there
    assert not jit.usable(shared, shared=True)
    assert jit.usable(shared, shared=False)
