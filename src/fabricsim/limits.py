"""Resource caps on user inputs (layer L0).

A cap keeps one invocation within what this machine can hold and finish: a topology of a million
hosts, four billion flows or a 2^53 global batch would exhaust memory or never return. Each cap is a
named default that an environment variable ``FABRICSIM_MAX_<NAME>`` raises (or lowers), and each
refusal says so: ``gpus: 2000000 exceeds the cap 1048576 (set FABRICSIM_MAX_GPUS to raise it)``.
Caps are read when checked (not at import), so a test or a user can change them per process: each
check looks the variable up in the process environment and parses its text only when that text
changed (a validated estimate checks several caps; ``os.environ.get`` alone cost ~0.5 us each).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from fabricsim.errors import FabricsimError

# name -> default; the reason for each number is next to it
CAPS: dict[str, int] = {
    "GPUS": 2**20,  # 1,048,576: ten times the largest cluster the project targets (100k GPUs)
    "GLOBAL_BATCH": 2**24,  # sequences per step; published runs use <= 2^16
    "TOKENS": 2**24,  # sequence / prompt / output length in tokens (16M; the longest contexts are ~10M)
    "REQUESTS": 10**6,  # requests one serving simulation steps through (~1 s per 10^4 requests)
    # speculative draft tokens per step: published drafters use K <= 8 (Leviathan et al. 2023 up to
    # 10, EAGLE-2 up to 8, Medusa 5 heads); beyond 64 the verify work only grows (E <= 1/(1-A))
    "DRAFT_TOKENS": 64,
    "TOP": 1000,  # ranked plans printed or returned
    "SEEDS": 10_000,  # Monte-Carlo runs of one simulated step
    "HOSTS": 2**17,  # 131,072 hosts of a built topology (graph arrays of ~10^6 links)
    "FLOWS": 2**22,  # 4,194,304 flows of one traffic pattern (routing arrays of ~10^8 entries)
    # flows one max-min (flow-fidelity) run simulates: ~16 s CPU for the 65,536-flow permutation on
    # fat-tree:k=64 and ~24 s for an all-to-all of 256 hosts (65,280 flows); the cost grows with
    # flows x rate-change events (186,192 all-to-all flows on 432 hosts took ~2 min), 2-core machine
    "SIMULATED_FLOWS": 2**16,
    # hosts of one packet-fidelity traffic run, as ``collective --fidelity packet`` caps its ranks:
    # an all-to-all of 512 hosts at 64 KiB is ~4 M packets, about a minute of the packet kernel
    "PACKET_ENDPOINTS": 512,
    # link entries of one routed flow set (~40 B each while routing): ECMP makes flows x hops, a
    # sprayed or adaptive DAG far more (8,192 flows on fat-tree:k=32: 4.5 M; 65,536 on k=64: ~140 M)
    "ROUTE_ENTRIES": 2**25,
    "PACKETS": 20_000_000,  # MTU packets of one packet-fidelity run: beyond, minutes (~15 s per 10^6 packets)
    "SIZE_BYTES": 2**50,  # one message / flow: 1 PiB
    "SEARCH_LAYOUTS": 10**8,  # layouts one planner search may enumerate
    "WORKERS": 1024,  # local sweep processes
    # tasks one sweep spec expands to: expanding one takes ~0.1 ms and ~0.3 kB here (measured on a
    # 2-core machine: 10^5 tasks in 12.6 s, 32 MB), so 10^6 is minutes before the first task runs
    "SWEEP_TASKS": 10**6,
    # micro-batch passes (micro-batches x pipeline chunks x replicas x runs) one simulated training
    # step executes: ~75 us and ~2 kB each (measured on a 2-core machine: 131,072 in 9.8 s, 277 MB)
    "SIMULATED_PASSES": 2**17,
    "INPUT_BYTES": 2**28,  # 256 MiB: one YAML / JSON / CSV input file
    # 64 MiB of HTML written by one report (~250,000 drawn marks at ~250 B each); 200 simulated
    # traces made a 288 MB page (issue 27)
    "REPORT_BYTES": 2**26,
}


# name -> (the environment's raw value it was parsed from, the cap): parsed once per distinct text
_PARSED: dict[str, tuple[object, int]] = {}
# os.environ keeps its variables in an encoded mapping (``_data``) that every change through it
# (``os.environ[...] = ``, ``monkeypatch.setenv``, ``del``) updates; reading that mapping is ~30x
# cheaper than ``os.environ.get``, which encodes the key and decodes the value per call. Where
# ``os.environ`` is not this object (replaced, e.g. by a plain dict), ``get`` it is.
_ENVIRON = os.environ
_DATA: dict | None = getattr(_ENVIRON, "_data", None)
_KEYS = {name: _ENVIRON.encodekey(f"FABRICSIM_MAX_{name}") for name in CAPS} if _DATA is not None else {}


_READ = _DATA.get if _DATA is not None else None


def cap(name: str) -> int:
    """The cap ``name`` (a key of :data:`CAPS`), or the integer in ``FABRICSIM_MAX_<name>`` if set."""
    if _READ is not None and os.environ is _ENVIRON:
        raw = _READ(_KEYS[name])
    else:
        raw = os.environ.get(f"FABRICSIM_MAX_{name}")
    if raw is None:
        return CAPS[name]
    hit = _PARSED.get(name)
    if hit is not None and hit[0] == raw:
        return hit[1]
    value = _parse(name, raw)
    _PARSED[name] = (raw, value)
    return value


def unset_probe(name: str) -> tuple[object, Callable[[object], object], object] | None:
    """(the ``os.environ`` object, a reader of its mapping, the key of ``FABRICSIM_MAX_<name>``) for a
    check on a hot path (the edge of ``api.train``) to tell, without a call into :func:`cap`, that
    the variable is unset and the cap is its default: ``os.environ is environ and read(key) is None``.
    None where the environment cannot be read that way (then call :func:`cap`)."""
    if _READ is None:
        return None
    return _ENVIRON, _READ, _KEYS[name]


def _parse(name: str, raw: object) -> int:
    """The cap in the raw environment value ``raw``; a refusal (not kept) names the variable."""
    text = _ENVIRON.decodevalue(raw) if isinstance(raw, bytes) else str(raw)  # type: ignore[attr-defined]
    try:
        value = int(text)
    except ValueError:
        raise FabricsimError(f"FABRICSIM_MAX_{name}", f"not an integer: {text!r}", "unset it or give one") from None
    if value < 1:
        raise FabricsimError(f"FABRICSIM_MAX_{name}", f"must be positive, got {value}", "unset it or give one")
    return value


def cap_hint(name: str) -> str:
    """How to raise the cap ``name`` (for an error's fix)."""
    return f"set FABRICSIM_MAX_{name} to raise it"


def check_cap(field: str, value: float, name: str) -> None:
    """Raise a one-line :class:`FabricsimError` naming ``field`` when ``value`` exceeds the cap ``name``."""
    limit = cap(name)
    if value > limit:
        raise FabricsimError(field, f"{show(value)} exceeds the cap {limit}", cap_hint(name))


def show(value: object) -> str:
    """A short, always-printable form of a user value (a 10**400 integer becomes ``~2^1329``)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"~2^{value.bit_length() - 1}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
