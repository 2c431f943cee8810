"""Reading user files: one safe path for every YAML, JSON, CSV and JSONL input (layer L0).

A user file may be a directory, a device that never ends (``/dev/zero``), a FIFO that never
answers, text that is not UTF-8, or YAML whose aliases expand exponentially ("billion laughs").
Each becomes one :class:`FabricsimError` naming the option, instead of a traceback or a hang:
only regular files are read, at most :data:`MAX_INPUT_BYTES`, decoded as UTF-8 (a leading
byte-order mark, as spreadsheets and some editors write, is dropped), and YAML aliases
(``*name``) are refused (fabricsim's files never need them).
"""

from __future__ import annotations

import codecs
import csv
import functools
import hashlib
import io
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricsim.errors import FabricsimError
from fabricsim.limits import cap, cap_hint

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

# PyYAML is imported where a YAML text is parsed (issue 27): a one-off ``train`` whose shipped files
# are all in the parsed cache (:func:`load_shipped_yaml`) never imports it (~8 ms of CPU).

MAX_INPUT_CAP = "INPUT_BYTES"


def _no_nul(path: str | Path, field: str) -> None:
    if "\0" in str(path):
        raise FabricsimError(field, "the path holds a NUL character", "give a file name")


def read_text(path: str | Path, field: str) -> str:
    """The UTF-8 text of the regular file ``path``; any other case is a one-line error naming ``field``."""
    where = Path(path)
    if not str(path):
        raise FabricsimError(field, "the path is empty", "give a file")
    _no_nul(path, field)
    try:
        info = os.stat(where)
    except OSError as exc:
        raise FabricsimError(field, f"cannot read {where}: {exc.strerror}", "check the path") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise FabricsimError(field, f"{where} is {kind}", "give a regular file")
    limit = cap(MAX_INPUT_CAP)
    if info.st_size > limit:
        problem = f"{where} holds {info.st_size} bytes, over the cap {limit}"
        raise FabricsimError(field, problem, cap_hint(MAX_INPUT_CAP))
    try:
        with open(where, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise FabricsimError(field, f"cannot read {where}: {exc.strerror}", "check the path") from None
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0  # a byte-order mark (utf-8-sig)
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = f"{where} is not UTF-8 text (byte {skip + exc.start})"
        raise FabricsimError(field, problem, "save it as UTF-8") from None


@functools.cache
def _no_alias_loader() -> Any:
    """PyYAML's safe loader without aliases: an alias could expand to 2^N nodes downstream (the
    class is made on first use, so that importing this module does not import PyYAML)."""
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.YAMLError(f"alias *{event.anchor} at line {event.start_mark.line + 1}")
            return super().compose_node(parent, index)

    return NoAliasLoader


def unreadable_value(exc: ValueError, where: str) -> str:
    """The problem of a value a YAML or JSON parser could not build: an integer longer than
    Python's int-str limit (``sys.get_int_max_str_digits()``, 4,300 digits by default: reading
    one is quadratic, CVE-2020-10735) or, from YAML, an impossible date such as 2024-13-45."""
    if "integer string conversion" in str(exc):
        return f"{where} holds an integer of more than {sys.get_int_max_str_digits()} digits"
    return f"{where} holds an unreadable value ({' '.join(str(exc).split())[:80]})"


def table_rows(text: str, jsonl: bool, field: str, hints: tuple[str, str, str]) -> list[tuple[int, Any]]:
    """(line number, record) of a table file: one JSON object per non-empty line (JSON Lines), or
    CSV rows after a header (dicts of stripped header -> stripped cell text; a row longer than the
    header puts its extra cells in a list, read as ""). A leading UTF-8 byte-order mark (spreadsheets
    write one) is dropped. ``hints`` = the fixes for (not JSON, not a number, not CSV); one-line
    errors name ``field`` and the line."""
    text = text.removeprefix("\ufeff")
    if jsonl:
        rows: list[tuple[int, Any]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((number, json.loads(line)))
            except (json.JSONDecodeError, RecursionError):
                raise FabricsimError(field, f"line {number}: not valid JSON", hints[0]) from None
            except ValueError as exc:  # an integer over Python's int-str digit limit
                raise FabricsimError(field, unreadable_value(exc, f"line {number}"), hints[1]) from None
        return rows
    reader = csv.DictReader(io.StringIO(text), skipinitialspace=True)
    try:
        return [(reader.line_num, {str(k).strip(): _cell(v) for k, v in row.items() if k}) for row in reader]
    except csv.Error as exc:
        raise FabricsimError(field, f"line {reader.line_num}: not CSV ({exc})", hints[2]) from None


def _cell(value: object) -> str:
    return (value if isinstance(value, str) else "").strip()


def parse_yaml(text: str, field: str, where: str = "the file") -> Any:
    """Parse YAML ``text`` safely (no Python objects, no aliases); errors name ``field``."""
    import yaml

    try:
        return yaml.load(text, Loader=_no_alias_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        if mark is None and str(exc).startswith("alias"):
            problem = f"{where}: YAML aliases are not accepted ({exc})"
            raise FabricsimError(field, problem, "write the value out") from None
        raise FabricsimError(field, f"malformed YAML in {where}{at}", "fix the YAML syntax") from None
    except RecursionError:
        raise FabricsimError(field, f"{where} nests too deeply", "flatten the YAML") from None
    except ValueError as exc:  # after YAMLError, which is not a ValueError
        raise FabricsimError(field, unreadable_value(exc, where), "fix that value") from None


def parse_json(text: str, field: str, where: str = "the file") -> Any:
    """Parse JSON ``text``; malformed JSON, deep nesting and over-long integers name ``field``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise FabricsimError(field, f"{where} nests too deeply", "flatten the JSON") from None
    except json.JSONDecodeError as exc:
        raise FabricsimError(field, f"malformed JSON in {where} at line {exc.lineno}", "fix the JSON") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError too: caught above
        raise FabricsimError(field, unreadable_value(exc, where), "fix that value") from None


def read_yaml(path: str | Path, field: str) -> Any:
    """Read and parse the YAML file ``path`` (see :func:`read_text` and :func:`parse_yaml`)."""
    return parse_yaml(read_text(path, field), field, str(path))


def load_shipped_yaml(path: str | Path | Traversable) -> Any:
    """Parse a YAML file shipped inside the package (the catalog's own data, never a user file)
    with libyaml's C loader where PyYAML has it: several times faster than the pure-Python loader,
    a third of a one-off ``train``'s parsing (issue 27). Both loaders give the same objects for
    every shipped file (tests/catalog/test_shipped_yaml.py); user files keep :func:`parse_yaml`
    and its guards (aliases, nesting, over-long integers).

    A file on disk is read from its parsed cache where that holds the same text (issue 27): a
    one-off ``train`` spent ~4 ms of CPU parsing its ten shipped files and ~8 ms importing PyYAML.
    The cache is a JSON file kept where and when Python keeps the package's bytecode
    (:func:`parsed_cache_path`; written unless ``sys.dont_write_bytecode``), holding the BLAKE2b
    digest of the YAML's bytes: any change of the text, whatever its modification time, misses
    and parses the YAML again. Only values that JSON gives back exactly (same ``repr``: dicts,
    lists, strings, ints, finite floats, booleans, None) are cached; a file holding anything else
    (a date, a non-string key) is parsed every time."""
    if not isinstance(path, (str, Path)):  # a package inside a zip file: no cache next to it
        return _parse_shipped(path.read_text(encoding="utf-8"))
    data = Path(path).read_bytes()
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    cache = parsed_cache_path(path)
    cached = _read_parsed(cache, digest)
    if cached is not _MISS:
        return cached
    value = _parse_shipped(data.decode("utf-8"))
    if not sys.dont_write_bytecode:
        _write_parsed(cache, digest, value)
    return value


_MISS = object()
PARSED_SUFFIX = ".parsed.json"


def _parse_shipped(text: str) -> Any:
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def parsed_cache_path(path: str | Path) -> Path:
    """Where the parsed cache of the shipped YAML file ``path`` lives: as its bytecode would
    (``importlib.util.cache_from_source``): under ``sys.pycache_prefix`` (``PYTHONPYCACHEPREFIX``)
    at the file's absolute folder where that is set, else in ``__pycache__`` next to the file."""
    folder, name = os.path.split(os.path.abspath(path))
    if sys.pycache_prefix:
        folder = os.path.join(sys.pycache_prefix, folder.lstrip(os.sep))
    else:
        folder = os.path.join(folder, "__pycache__")
    return Path(folder, name + PARSED_SUFFIX)


def _read_parsed(cache: Path, digest: str) -> Any:
    """The value cached in ``cache`` for the text of digest ``digest``, or :data:`_MISS` (no file,
    another text, or a file this function cannot read back: then the YAML is parsed again)."""
    try:
        with open(cache, "rb") as handle:
            entry = json.loads(handle.read())
    except (OSError, ValueError):
        return _MISS
    if not isinstance(entry, dict) or entry.get("blake2b") != digest or "value" not in entry:
        return _MISS
    return entry["value"]


def _write_parsed(cache: Path, digest: str, value: Any) -> None:
    """Keep ``value`` in ``cache`` if JSON gives it back exactly; written whole or not at all (a
    temporary file renamed), and silently skipped where the folder cannot be written, as Python
    skips bytecode it cannot write."""
    try:
        text = json.dumps({"blake2b": digest, "value": value}, allow_nan=False)
    except (TypeError, ValueError):  # a date, a tuple key, an infinity: not JSON
        return
    if repr(json.loads(text)["value"]) != repr(value):  # e.g. an int key read back as a string
        return
    try:
        os.makedirs(cache.parent, exist_ok=True)
        write_atomic(cache, text, "parsed cache")
    except (OSError, FabricsimError):
        return


def _read_only(target: Path, mode: int) -> bool:
    """Whether an existing file must not be replaced: no write bit for anyone (which root, whom
    ``os.access`` always lets write, would otherwise replace), or not writable by this user. The
    atomic rename would replace it all the same, so the permission is checked here."""
    return not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK)


def check_output_path(path: str | Path, field: str) -> Path:
    """``path`` as a place fabricsim may write a file, or a one-line error naming ``field``.

    Refused: an empty path, a directory, anything that exists but is not a regular file (a device,
    FIFO, socket or symbolic link: the atomic rename would replace it), a read-only file (the rename
    would replace it too), a missing parent folder (never created here) and a parent that is not a
    writable folder.
    """
    if not str(path).strip():
        raise FabricsimError(field, "the path is empty", "give a file name")
    _no_nul(path, field)
    target = Path(path)
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise FabricsimError(field, f"cannot write {target}: {exc.strerror}", "give another path") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = "a directory, not a regular file" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise FabricsimError(field, f"{target} is {kind}", "give a path to a regular file")
    if info is not None and _read_only(target, info.st_mode):
        problem = f"{target} is read-only (mode {stat.S_IMODE(info.st_mode):o})"
        raise FabricsimError(field, problem, "make it writable or give another path")
    parent = target.parent
    if not parent.is_dir():
        raise FabricsimError(field, f"folder {parent} does not exist", "create it first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FabricsimError(field, f"folder {parent} is not writable", "give another path")
    return target


def write_atomic(path: str | Path, text: str, field: str = "output") -> None:
    """Write a file all at once (temp file + rename), only over nothing or a regular file
    (:func:`check_output_path`); nothing is left half-written, and I/O errors are one line."""
    target = check_output_path(path, field)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:200]}.", suffix=".tmp")
    except OSError as exc:
        raise FabricsimError(field, f"cannot write in {target.parent}: {exc.strerror}", "give another path") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file normal permissions
        check_output_path(target, field)  # still nothing or a regular file just before the rename
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FabricsimError(field, f"cannot write {target}: {exc.strerror}", "give another path") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
