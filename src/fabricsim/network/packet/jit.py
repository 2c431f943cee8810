"""numba compilation of the packet kernel, cached in a folder that follows its sources (layer L3).

Every compiled function of the packet package is declared with this module's :func:`njit` (the
same options as ``numba.njit``). Two problems of numba's own ``cache=True`` are solved here:

* Stale code. numba keys a cached function on its own file's timestamp only, but the kernel's
  functions inline helpers from heap, kernel and reaction and freeze the column numbers of layout
  as constants: an edit of a helper ran the old machine code until the cache was cleared. The
  cache therefore lives in a folder named after a hash of every source file of the package
  (:func:`source_key`); an edit of any of them moves it to a new, empty folder.
* No writable folder. With the package folder and HOME unwritable, numba raised "cannot cache
  function" at import (a 48-line traceback on every packet run). The folder is the first usable of
  ``$NUMBA_CACHE_DIR``, the package's ``__pycache__``, the user's cache folder and a private folder
  in the temporary directory; with none, functions compile uncached, after one notice line.

``numba.config.CACHE_DIR`` is set only while a function is declared (numba picks a function's cache
folder then), so other numba users in the process keep their own caches.

A first run on a new machine (or after an edit) compiles for 30-90 s: :func:`announce_compile` says
so on stderr first, only when numba has no cached machine code for this CPU to load (issue 26);
``fabricsim warmup`` does that compile ahead of time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parent
KEY_HEX_CHARS = 16  # 64 bits of SHA-256: distinct source versions never share a folder in practice
IN_TREE_PREFIX = "numba-"  # <package>/__pycache__/numba-<key>: older keys there are removed


def source_key(folder: Path = PACKAGE_DIR) -> str:
    """A hash of the names and bytes of every ``*.py`` file in ``folder`` (the packet package)."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:KEY_HEX_CHARS]


def _user_cache_root() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        return Path(base)
    try:
        return Path.home() / ".cache"
    except RuntimeError:  # no HOME and no password entry
        return None


def candidates(key: str) -> list[Path]:
    """Cache folders to try, best first: the user's NUMBA_CACHE_DIR, the package's __pycache__, the
    user's cache folder, then a per-user folder in the temporary directory."""
    out = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        out.append(Path(os.environ["NUMBA_CACHE_DIR"]) / f"fabricsim-packet-{key}")
    out.append(PACKAGE_DIR / "__pycache__" / f"{IN_TREE_PREFIX}{key}")
    user = _user_cache_root()
    if user is not None:
        out.append(user / "fabricsim" / f"numba-{key}")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    out.append(Path(tempfile.gettempdir()) / f"fabricsim-numba-{uid}" / key)
    return out


def _private(folder: Path) -> bool:
    """True unless ``folder`` may be written by someone else (a shared temp folder): its machine code
    is loaded and run, so it must be this user's, writable by no one else."""
    if not hasattr(os, "getuid"):
        return True
    info = folder.stat()
    return info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def usable(folder: Path, shared: bool = False) -> bool:
    """Create ``folder`` and check that a file can be written in it; in a ``shared`` place (the
    temporary directory) it and its parent must also be private to this user."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if shared and not (_private(folder) and _private(folder.parent)):
            return False
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError:
        return False
    return True


def _remove_older(folder: Path) -> None:
    """Remove the in-tree caches of earlier source versions (siblings ``numba-*`` of ``folder``)."""
    if folder.parent != PACKAGE_DIR / "__pycache__":
        return
    for old in folder.parent.glob(f"{IN_TREE_PREFIX}*"):
        if old != folder and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def notice(text: str) -> None:
    """One line on stderr (a fallback the user may want to fix, not an error)."""
    print(f"fabricsim: {text}", file=sys.stderr)


@cache
def cache_dir() -> Path | None:
    """The cache folder of this process's packet sources, or None (compile uncached); decided once."""
    key = source_key()
    options = candidates(key)
    for index, folder in enumerate(options):
        last = index == len(options) - 1  # the temporary directory
        if usable(folder, shared=last):
            _remove_older(folder)
            if last:
                notice(f"numba cache in {folder} (no writable cache folder; set NUMBA_CACHE_DIR to choose one)")
            return folder
    notice("no writable folder for numba's cache: the packet kernel compiles on every run (set NUMBA_CACHE_DIR)")
    return None


@contextmanager
def _numba_cache_dir(folder: Path) -> Iterator[None]:
    from numba.core import config

    saved = config.CACHE_DIR
    config.CACHE_DIR = str(folder)
    try:
        yield
    finally:
        config.CACHE_DIR = saved


COMPILE_NOTICE = "compiling the packet kernel (once, ~30 s)"


def will_compile(dispatcher: Any) -> bool:
    """True when calling the numba ``dispatcher`` will compile it: nothing compiled in this process
    yet, and its cache index holds no machine code for this CPU and these sources (a stale index,
    another CPU's code or an uncached function all compile). Reads numba's cache index the way
    numba does (``_load_index``: empty when missing, of another numba version, or stale)."""
    if dispatcher.overloads:
        return False
    try:
        index = dispatcher._cache._cache_file._load_index()
        magic = dispatcher.targetctx.codegen().magic_tuple()
    except AttributeError:  # numba's NullCache (cache=False): no index, always compiled
        return True
    except (OSError, EOFError, ValueError):  # an unreadable index: numba recompiles too
        return True
    return not any(key[1] == magic for key in index)


def announce_compile(dispatcher: Any) -> bool:
    """Print :data:`COMPILE_NOTICE` on stderr if calling ``dispatcher`` will compile; return whether it will."""
    compiling = will_compile(dispatcher)
    if compiling:
        notice(COMPILE_NOTICE)
    return compiling


def njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(**options)`` whose ``cache=True`` uses :func:`cache_dir` (or is dropped)."""
    from numba import njit as numba_njit

    def declare(function: Callable[..., Any]) -> Any:
        if not options.get("cache"):
            return numba_njit(**options)(function)
        folder = cache_dir()
        if folder is None:
            return numba_njit(**{**options, "cache": False})(function)
        with _numba_cache_dir(folder):
            return numba_njit(**options)(function)

    return declare
