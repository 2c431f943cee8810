"""Serialise results (layer L10): deterministic JSON text and result files, and reading them back
(``fabricsim report``) with every malformed file a one-line error."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from fabricsim import textfile
from fabricsim.errors import FabricsimError
from fabricsim.limits import cap, cap_hint

# fabricsim's results nest at most ~6 levels and Chrome traces a few more (event args); deeper JSON
# is refused when read, so the recursive JSON writer and the renderers (Python's recursion limit:
# 1,000 frames) never meet it
MAX_JSON_DEPTH = 100


def _clean(value: Any) -> Any:
    """Make values JSON-safe and stable: enums to values, NaN/inf to None, tuples to lists."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "value") and not isinstance(value, (int, float, str, bool)):
        return _clean(value.value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def dumps(payload: dict[str, Any]) -> str:
    """JSON text with sorted keys: byte-identical for identical results."""
    return json.dumps(_clean(payload), sort_keys=True, indent=2)


check_output_path = textfile.check_output_path  # io is where the CLI reaches file checks


def write_atomic(path: str | Path, text: str, field: str = "output") -> None:
    """Write a file all at once, only over nothing or a regular file (see :func:`fabricsim.textfile.write_atomic`)."""
    textfile.write_atomic(path, text, field)


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON (a scalar is 0), level by level without recursion."""
    depth, level = 0, [value] if isinstance(value, (dict, list)) else []
    while level:
        depth += 1
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]
    return depth


def parse_result(text: str, where: str, field: str = "result") -> dict[str, Any]:
    """The JSON object in ``text`` (read from ``where``); one-line errors naming ``field`` for
    text that is not JSON, nests deeper than :data:`MAX_JSON_DEPTH`, holds an integer too long to
    read (over Python's 4,300 digits), or is not an object."""
    fix = "give the output of a command run with --json, or a Chrome trace"
    try:
        data = json.loads(text)
    except RecursionError:
        raise FabricsimError(field, f"{where} nests too deeply", fix) from None
    except json.JSONDecodeError as exc:
        raise FabricsimError(field, f"{where} is not JSON (line {exc.lineno})", fix) from None
    except ValueError:  # an integer over sys.get_int_max_str_digits() digits
        raise FabricsimError(field, f"{where} holds a number too long to read", fix) from None
    if _depth(data) > MAX_JSON_DEPTH:
        raise FabricsimError(field, f"{where} nests deeper than {MAX_JSON_DEPTH} levels", fix)
    if not isinstance(data, dict):
        raise FabricsimError(field, f"{where} does not hold a JSON object", fix)
    return data


def read_results(paths: list[str], field: str = "result") -> list[dict[str, Any]]:
    """The JSON object of each file in ``paths`` (:func:`parse_result`). Together they may hold at
    most the ``INPUT_BYTES`` cap (:mod:`fabricsim.limits`): a report reads all of them at once."""
    limit, total, out = cap(textfile.MAX_INPUT_CAP), 0, []
    for path in paths:
        text = textfile.read_text(path, field)
        total += os.stat(path).st_size
        if total > limit:
            problem = f"the {len(paths)} files hold more than the cap of {limit} bytes together"
            raise FabricsimError(field, problem, cap_hint(textfile.MAX_INPUT_CAP))
        out.append(parse_result(text, str(path), field))
    return out
