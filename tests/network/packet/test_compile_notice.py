"""The first packet run says that it compiles, and only then (issue 26: 30-90 s of silence)."""

from __future__ import annotations

import numba

from fabricsim.network.packet import jit


def _add(a, b):
    return a + b


def _declare(folder):
    with jit._numba_cache_dir(folder):  # as jit.njit declares: numba picks the folder now
        return numba.njit(cache=True)(_add)


def test_the_notice_comes_when_numba_compiles_and_not_when_it_loads(tmp_path, capsys):
    fresh = _declare(tmp_path)
    assert jit.announce_compile(fresh)  # an empty cache folder: numba will compile
    assert capsys.readouterr().err == f"fabricsim: {jit.COMPILE_NOTICE}\n"
    assert fresh(2, 3) == 5  # compiles and writes the cache
    assert not jit.announce_compile(fresh)  # compiled in this process
    again = _declare(tmp_path)  # a new process's view: the cache holds machine code for this CPU
    assert not jit.announce_compile(again)
    assert again(2, 3) == 5
    assert again.stats.cache_hits and capsys.readouterr().err == ""


def test_an_uncached_function_always_compiles():
    assert jit.will_compile(numba.njit(cache=False)(_add))
