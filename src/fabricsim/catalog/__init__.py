"""The catalog: YAML data with provenance, and its loader (layer L1).

One YAML file per item under ``data/<kind>/<name>.yaml``. Every number is written as
``{value: ..., source: "..."}``; the loader replaces it by its value and keeps the source in the
item's ``sources`` map (keyed by the dotted field path; a top-level ``source:`` covers every number
of a file transcribed from one document, such as a model's ``config.json``), so ``fabricsim catalog show`` can print it.
Lookups are exact names; a name that is not found lists the close ones. Anywhere a name is
accepted, a path to a YAML file (or, for models, a Hugging Face ``config.json``) works too.
Loads are cached: a catalog name for the life of the process, a user's file until it (or a user file
it names) changes on disk, so an edited file is read again by the next call in the same process.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from fabricsim import textfile
from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.specs import DeviceSpec, LinkSpec, ModelSpec, SwitchSpec, SystemSpec
from fabricsim.specs.memory_tier import KvPoolSpec

KINDS = ("devices", "systems", "models", "links", "switches", "pools")
_T = TypeVar("_T")


@functools.cache  # asked on every load of a user's file; the package does not move while it runs
def data_root() -> Path:
    """Folder that holds the shipped YAML data."""
    return Path(str(resources.files("fabricsim.catalog") / "data"))


def names(kind: str) -> list[str]:
    """Sorted names of the catalog items of ``kind`` (one of :data:`KINDS`)."""
    return sorted(p.stem for p in (data_root() / kind).glob("*.yaml"))


def unwrap_sources(node: Any, path: str = "", sources: dict[str, str] | None = None) -> tuple[Any, dict[str, str]]:
    """Replace every ``{value, source}`` mapping by its value; collect sources by dotted path."""
    sources = {} if sources is None else sources
    if isinstance(node, dict):
        if "value" in node and "source" in node and set(node) <= {"value", "source", "note"}:
            sources[path] = str(node["source"])
            return node["value"], sources
        out = {}
        for key, value in node.items():
            child = f"{path}.{key}" if path else str(key)
            out[key], _ = unwrap_sources(value, child, sources)
        return out, sources
    if isinstance(node, list):
        return [unwrap_sources(v, f"{path}[{i}]", sources)[0] for i, v in enumerate(node)], sources
    return node, sources


def read_yaml(path: Path, field: str) -> dict[str, Any]:
    """Read a YAML mapping, turning any I/O, encoding or syntax problem into a one-line user error.
    A catalog item looked up by name (``data/<kind>/<name>.yaml``) is the package's own file: it is
    parsed with the fast loader (:func:`fabricsim.textfile.load_shipped_yaml`)."""
    data = textfile.load_shipped_yaml(path) if path.parent.parent == data_root() else textfile.read_yaml(path, field)
    if not isinstance(data, dict):
        raise FabricsimError(field, f"{path} does not hold a YAML mapping", "write key: value pairs")
    return data


def _locate(kind: str, name_or_path: str, field: str) -> Path:
    try:
        return _locate_path(kind, name_or_path, field)
    except OSError as exc:  # e.g. a name too long for the file system
        raise FabricsimError(field, f"unusable name or path ({exc.strerror})", "give a name or a file") from None
    except FabricsimError:
        raise
    except ValueError:  # a NUL character (FabricsimError is a ValueError too: passed on above)
        raise FabricsimError(field, "unusable name or path (a NUL character)", "give a name or a file") from None


def _locate_path(kind: str, name_or_path: str, field: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml", ".json") or candidate.exists():
        return existing_file(candidate, field, "give a catalog name or an existing file")
    path = data_root() / kind / f"{name_or_path}.yaml"
    if not path.is_file():
        raise unknown_name(field, name_or_path, names(kind))
    return path


def existing_file(path: Path, field: str, fix: str) -> Path:
    """``path`` if it is a regular file; otherwise an error that says what it is instead (missing,
    a directory, or another kind of file such as a FIFO or ``/dev/null``)."""
    if os.path.isfile(path):  # os.path: False, not an exception, for a NUL or an over-long name
        return path
    if not os.path.exists(path):
        raise FabricsimError(field, f"file not found: {path}", fix)
    kind = "a directory" if os.path.isdir(path) else "not a regular file"
    raise FabricsimError(field, f"{path} is {kind}", fix)


def _validation_message(exc: ValidationError) -> tuple[str, str]:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(document)"
    return where, str(error["msg"]).removeprefix("Value error, ")  # a validator's own message reads alone


def _build(spec_type: type, data: dict[str, Any], field: str, origin: str) -> Any:
    try:
        return spec_type.model_validate(data)
    except ValidationError as exc:
        where, message = _validation_message(exc)
        raise FabricsimError(field, f"{origin}: {where}: {message}", "fix that key") from None


def _load_item(kind: str, name_or_path: str, field: str) -> tuple[dict[str, Any], dict[str, str], str]:
    path = _locate(kind, name_or_path, field)
    raw = read_yaml(path, field) if path.suffix != ".json" else _read_json(path, field)
    file_source = raw.pop("source", None) if path.suffix != ".json" else None
    data, sources = unwrap_sources(raw)
    if file_source is not None:
        sources["*"] = str(file_source)
    data.setdefault("name", path.stem)
    return data, sources, str(path)


def _read_json(path: Path, field: str) -> dict[str, Any]:
    data = textfile.parse_json(textfile.read_text(path, field), field, str(path))
    if not isinstance(data, dict):
        raise FabricsimError(field, f"{path} does not hold a JSON object", "give a config.json")
    return data


# ----------------------------------------------------------------------------- caching the loads
# A catalog name stands for a file shipped with the package, which does not change while a process
# runs: it is cached by name (one dict lookup). A user's file can be edited between two calls of the
# same process (a notebook, ``api.*`` in a loop, a sweep worker), so it is cached by its path and
# its stat stamp, and by the stamps of the user files it names (a system YAML naming a device
# YAML): an edit, even one that keeps the size, is read on the next call.

Stamp = tuple[int, int, int, int]  # st_mtime_ns, st_ctime_ns, st_size, st_ino
_building = threading.local()  # .deps: a stack of lists, the user files read by each load under way


def _stamp(path: str) -> Stamp | None:
    """The stat stamp of ``path``, None when it cannot be read (the load then says why)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino


def _note(deps: tuple[tuple[str, Stamp | None], ...]) -> None:
    """Add ``deps`` to the user files of the load under way, if any (a system naming a device file)."""
    stack = getattr(_building, "deps", None)
    if stack:
        stack[-1].extend(deps)


def cached_load(kind: str, maxsize: int) -> Callable[[Callable[..., _T]], Callable[..., _T]]:
    """Cache a ``load_*(name_or_path, ...)`` (the catalog's and the API's loaders of other kinds: failure
    rates, prices): catalog names by name, user files by path and stamp
    (at most ``maxsize`` of them, least recently used dropped). ``cache_clear()`` empties both."""

    def wrap(build: Callable[..., _T]) -> Callable[..., _T]:
        shipped: dict[Any, _T] = {}
        files: OrderedDict[Any, tuple[_T, tuple[tuple[str, Stamp | None], ...]]] = OrderedDict()
        lock = threading.Lock()

        def from_file(key: Any, path: str, name_or_path: str, args: tuple, kwargs: dict) -> _T:
            with lock:
                entry = files.get(key)
            if entry is not None and all(_stamp(dep) == stamp for dep, stamp in entry[1]):
                with lock:
                    if key in files:
                        files.move_to_end(key)
                _note(entry[1])
                return entry[0]
            deps: list[tuple[str, Stamp | None]] = [(path, _stamp(path))]  # stamped before it is read
            stack = _building.__dict__.setdefault("deps", [])
            stack.append(deps)
            try:
                spec = build(name_or_path, *args, **kwargs)
            finally:
                stack.pop()
            with lock:
                files[key] = (spec, tuple(deps))
                files.move_to_end(key)
                while len(files) > maxsize:
                    files.popitem(last=False)
            _note(tuple(deps))
            return spec

        @functools.wraps(build)
        def load(name_or_path: str, *args: Any, **kwargs: Any) -> _T:
            key = (name_or_path, args, tuple(sorted(kwargs.items()))) if args or kwargs else name_or_path
            spec = shipped.get(key)
            if spec is not None:
                return spec
            try:
                located = _locate_path(kind, str(name_or_path), kind)
            except (FabricsimError, OSError, ValueError):
                return build(name_or_path, *args, **kwargs)  # raises the error, naming the caller's option
            if located.parent.parent == data_root():
                spec = shipped[key] = build(name_or_path, *args, **kwargs)
                return spec
            path = os.path.abspath(located)  # the same relative name in another folder is another file
            return from_file((key, path), path, name_or_path, args, kwargs)

        def cache_clear() -> None:
            with lock:
                shipped.clear()
                files.clear()

        load.cache_clear = cache_clear  # type: ignore[attr-defined]
        # the spec a catalog name (no other arguments) was loaded as, else None: one dict look-up, for
        # a caller on a hot path (api.train) that calls ``load`` only on None; never a user file's spec
        load.loaded = shipped.get  # type: ignore[attr-defined]
        return load

    return wrap




@cached_load("devices", maxsize=256)
def load_device(name_or_path: str) -> DeviceSpec:
    data, sources, origin = _load_item("devices", name_or_path, "device")
    data["sources"] = sources
    return _build(DeviceSpec, data, "device", origin)


@cached_load("links", maxsize=256)
def load_link(name_or_path: str) -> LinkSpec:
    data, sources, origin = _load_item("links", name_or_path, "link")
    data["sources"] = sources
    return _build(LinkSpec, data, "link", origin)


@cached_load("switches", maxsize=256)
def load_switch(name_or_path: str) -> SwitchSpec:
    data, sources, origin = _load_item("switches", name_or_path, "switch")
    data["sources"] = sources
    return _build(SwitchSpec, data, "switch", origin)


@cached_load("pools", maxsize=64)
def load_pool(name_or_path: str, field: str = "pool") -> KvPoolSpec:
    """Load a shared CXL memory pool (``data/pools``) and resolve the link of its ports; errors name
    ``field`` (the option that chose it)."""
    data, sources, origin = _load_item("pools", name_or_path, field)
    if not isinstance(data.get("link"), str):
        raise FabricsimError(field, f"{origin}: 'link' must name a catalog link such as cxl3", "see the catalog pools")
    data["link"] = load_link(data["link"])
    data["sources"] = sources
    return _build(KvPoolSpec, data, field, origin)


def _link(value: Any, origin: str) -> LinkSpec:
    """A system's link: a catalog name or path, or an inline mapping (a calibrated system writes
    its fitted NIC inline; its sources stay in the system's ``sources`` map)."""
    if isinstance(value, dict):
        return _build(LinkSpec, value, "link", origin)
    return load_link(str(value))


@cached_load("systems", maxsize=256)
def load_system(name_or_path: str) -> SystemSpec:
    """Load a system and resolve the device, links and switches it names."""
    data, sources, origin = _load_item("systems", name_or_path, "system")
    try:
        device = load_device(str(data["device"]))
        up = dict(data["scale_up"])
        up["link"] = _link(up["link"], origin)
        up["switch"] = load_switch(str(up["switch"])) if up.get("switch") else None
        up.setdefault("bandwidth_Bps", device.nvlink_bandwidth_Bps)
        out = dict(data["scale_out"])
        out["nic"] = _link(out["nic"], origin)
        out["switch"] = load_switch(str(out["switch"]))
        out.setdefault("in_network_reduction", out["switch"].in_network_reduction)
        host = load_link(str(data["host_link"]))
        tiers = _memory_tiers(data.get("memory_tiers") or {})
    except KeyError as exc:
        raise FabricsimError("system", f"{origin}: missing key {exc.args[0]!r}", "see the catalog systems") from None
    except (TypeError, AttributeError, ValueError):
        raise FabricsimError("system", f"{origin}: scale_up/scale_out must be mappings", "see the catalog") from None
    resolved = {**data, "device": device, "scale_up": up, "scale_out": out, "host_link": host, "sources": sources}
    resolved["memory_tiers"] = tiers
    return _build(SystemSpec, resolved, "system", origin)


def _memory_tiers(tiers: dict[str, Any]) -> dict[str, Any]:
    """``memory_tiers`` of a system YAML with each tier's ``link`` name resolved to a link spec."""
    return {kind: {**dict(tier), "link": load_link(str(tier["link"]))} for kind, tier in tiers.items()}


_HF_ALIASES = {"n_layer": "num_hidden_layers", "n_embd": "hidden_size", "n_head": "num_attention_heads"}


@cached_load("models", maxsize=256)
def load_model(name_or_path: str) -> ModelSpec:
    """Load a catalog model, a model YAML, or a Hugging Face ``config.json`` (unknown keys ignored)."""
    data, sources, origin = _load_item("models", name_or_path, "model")
    if origin.endswith(".json"):
        data = {_HF_ALIASES.get(k, k): v for k, v in data.items()}
        known = set(ModelSpec.model_fields) | {"n_routed_experts"}
        data = {k: v for k, v in data.items() if k in known}
        if data.get("name") == Path(origin).stem == "config":  # name a config.json after its folder
            data["name"] = Path(origin).parent.name or "config"
        if "intermediate_size" not in data and isinstance(data.get("hidden_size"), int):
            data["intermediate_size"] = 4 * int(data["hidden_size"])
    data["sources"] = sources
    return _build(ModelSpec, data, "model", origin)


def describe(kind: str, name: str) -> dict[str, Any]:
    """The item as plain data (values and the source of each), for ``fabricsim catalog show``."""
    loaders = {
        "devices": load_device,
        "systems": load_system,
        "models": load_model,
        "links": load_link,
        "switches": load_switch,
        "pools": load_pool,
    }
    if kind not in loaders:
        raise unknown_name("kind", kind, KINDS)
    return loaders[kind](name).model_dump(mode="json")


def system_document(name_or_path: str) -> dict[str, Any]:
    """The raw YAML mapping of a system (``{value, source}`` kept), for tools that write a variant
    of it such as ``fabricsim calibrate``."""
    return read_yaml(_locate("systems", name_or_path, "system"), "system")
