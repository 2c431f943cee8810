"""Cluster spec documents (layer L8): one fabric, several jobs on it, in YAML.

::

    fabric: leaf-spine:leaves=32,spines=8,hosts_per_leaf=32,gbps=400,oversubscription=4
    routing: ecmp            # ecmp | spray | adaptive (default ecmp)
    fidelity: flow           # flow | packet (default flow)
    background: permutation:0.3   # optional: another tenant's traffic, PATTERN:LOAD
    transport: uet           # optional, packet only: roce | ib | uet (default the NIC's)
    ber: 1.0e-9              # optional, packet only: post-FEC bit-error rate of every link
    cc_params: {classes: 2, background_class: 1}   # optional, packet only: as --cc-param NAME=VALUE
    jobs:
      - name: pretrain
        command: train --model gpt3-175b --system dgx-h100 --gpus 512 --tp 8 --pp 8 --global-batch 512 --seq-len 2048
        placement: spread    # packed | spread | random:SEED | FILE (default packed)
      - name: chat
        command: infer --model llama3-70b --system dgx-h100 --gpus 64 --tp 8 --batch 32 --input-len 1024 --output-len 64
      - name: storage
        command: traffic all-to-all --size 16MiB --hosts 64

``fabric`` is a builder string, as ``traffic --topology`` takes it; its host ports are the NICs of
the jobs' system, node-major (``nics_per_node`` ports per node), so the train and infer jobs of one
spec name the same ``--system`` (the fabric holds one kind of node). A job's ``command`` is the
fabricsim command a user would run alone (see :mod:`fabricsim.cluster.command` for which options a
job may give); a traffic tenant's ``--hosts`` are GPUs of whole nodes (hosts of the bare fabric
when no job names a system). ``placement`` maps a job's ranks to whole nodes that the jobs before it
left free, in the order the spec lists the jobs; a FILE gives one endpoint (GPU) index of the
whole fabric per rank, and a relative FILE is read from the spec's folder.

``transport``, ``ber`` and ``cc_params`` set the packet network every job shares, as ``train
--transport/--ber/--cc-param`` set a single job's (:func:`fabricsim.api.fabric.packet_transport`):
``cc_params`` is a mapping NAME: VALUE or a list of ``NAME=VALUE`` texts (``class_weights: "3,1"``
for a per-class list); each is type- and range-checked here, the traffic classes against the
transport where the fabric is built, and every problem names ``cc_params``.

The document's shape is checked by pydantic (frozen, unknown keys refused); every problem is one
:class:`FabricsimError` naming the key as the user wrote it (``jobs[1].command``) and the fix.
Nothing here reads the catalog: the API layer passes in what a job's text is checked against
(:class:`JobParsers`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from fabricsim.cluster.command import parse_command
from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.network.packet.params import PacketParams, parse_cc_params
from fabricsim.textfile import read_yaml
from fabricsim.topology.routing import parse_routing

KEYS_HINT = ("a spec has fabric, routing, fidelity, background, transport, ber, cc_params, jobs; a job has name, "
             "command, placement")
CC_PARAMS_HINT = "e.g. cc_params: {classes: 2, background_class: 1}, the names and values --cc-param takes"
POLICY_WORDS = ("packed", "spread", "random")
"""Placement texts that are policies; any other text is a FILE (one endpoint index per rank)."""


class ClusterFidelity(StrEnum):
    """How the fabric is timed: max-min flows or packets through queues (the analytic fidelity has no fabric)."""

    FLOW = "flow"
    PACKET = "packet"


@dataclass(frozen=True, slots=True)
class JobParsers:
    """What a job's text is checked against, passed in by :mod:`fabricsim.api.cluster` (the API sits
    above this layer): per command kind its public API function, and the placement parser."""

    commands: Mapping[str, Callable[..., Any]]  # "train" -> fabricsim.api.train, "infer", "traffic"
    placement: Callable[[str], Any]  # fabricsim.topology.placement.parse_placement


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One job: its ``kind`` (train | infer | traffic), the keywords of the API function its command
    calls, the placement as written and as parsed (a ``PlacementPolicy``)."""

    name: str
    kind: str
    kwargs: Mapping[str, Any]
    placement: str
    policy: Any

    @property
    def gpus(self) -> int:
        """GPUs (train, infer) or hosts (a traffic tenant) the job occupies."""
        return int(self.kwargs["hosts" if self.kind == "traffic" else "gpus"])


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A validated spec: the fabric (builder string), how it is routed and timed, the jobs in order."""

    fabric: str
    routing: str
    fidelity: str
    background: str | None
    jobs: tuple[JobSpec, ...]
    transport: str | None = None  # packet only; checked where the fabric is built (api.fabric)
    ber: str | None = None  # packet only; the rate as text, checked with the transport
    cc_params: tuple[str, ...] | None = None  # packet only; NAME=VALUE texts, as --cc-param gives them

    @property
    def system(self) -> str | None:
        """The ``--system`` every train/infer job names (None for traffic tenants alone)."""
        return next((str(job.kwargs["system"]) for job in self.jobs if "system" in job.kwargs), None)


class _JobDocument(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    name: str
    command: str
    placement: str = "packed"


class _SpecDocument(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    fabric: str
    routing: str = "ecmp"
    fidelity: str = "flow"
    background: str | None = None
    transport: str | None = None
    ber: str | float | None = None
    cc_params: Any = None  # shape checked by _cc_params, so its errors name cc_params alone
    jobs: list[_JobDocument]


def key_path(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as the key path the user wrote: ``('jobs', 1, 'command')`` -> ``jobs[1].command``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "spec"


def _shape_error(exc: ValidationError) -> FabricsimError:
    first = exc.errors()[0]
    path, kind = key_path(tuple(first["loc"])), first["type"]
    if kind == "extra_forbidden":
        return FabricsimError(path, "unknown key", KEYS_HINT)
    if kind == "missing":
        return FabricsimError(path, "required key is missing", KEYS_HINT)
    if kind == "string_type":
        got = first.get("input")
        return FabricsimError(path, f"must be text, got {got!r}", "quote it if YAML reads it as a number")
    if kind == "list_type":
        return FabricsimError(path, "must be a list of jobs", "jobs: [- name: ..., command: ...]")
    if kind in ("model_type", "dict_type"):
        return FabricsimError(path, "must be a mapping", "e.g. - name: a, command: train ...")
    return FabricsimError(path, str(first["msg"]), KEYS_HINT)


def _text(field: str, value: str) -> str:
    if not value.strip():
        raise FabricsimError(field, "is empty", "remove the key or give a value")
    return value.strip()


def _placement_text(text: str, folder: Path) -> str:
    """A FILE placement read from the spec's folder when relative; policy words as written."""
    if text.strip().lower().split(":")[0] in POLICY_WORDS or Path(text).is_absolute():
        return text
    return str(folder / text)


def _job(index: int, document: _JobDocument, parsers: JobParsers, folder: Path) -> JobSpec:
    where = f"jobs[{index}]"
    kind, kwargs = parse_command(document.command, parsers.commands, f"{where}.command")
    placement = _text(f"{where}.placement", document.placement)
    try:
        policy = parsers.placement(_placement_text(placement, folder))
    except FabricsimError as exc:
        raise FabricsimError(f"{where}.placement", exc.problem, exc.fix) from None
    return JobSpec(document.name.strip(), kind, MappingProxyType(kwargs), placement, policy)


def _check_names(jobs: list[_JobDocument]) -> None:
    """Every job has its own name (checked before any command is parsed)."""
    first: dict[str, int] = {}
    for index, job in enumerate(jobs):
        name = _text(f"jobs[{index}].name", job.name)
        if name in first:
            problem = f"{name!r} is already the name of jobs[{first[name]}]"
            raise FabricsimError(f"jobs[{index}].name", problem, "give every job its own name")
        first[name] = index


def _check_system(jobs: tuple[JobSpec, ...]) -> None:
    """The train/infer jobs name one system: the fabric holds one kind of node."""
    system: tuple[int, str] | None = None
    for index, job in enumerate(jobs):
        if "system" not in job.kwargs:
            continue
        if system is None:
            system = (index, str(job.kwargs["system"]))
        elif job.kwargs["system"] != system[1]:
            problem = f"--system {job.kwargs['system']} differs from jobs[{system[0]}]'s {system[1]}"
            fix = "one fabric holds one kind of node: use one --system"
            raise FabricsimError(f"jobs[{index}].command", problem, fix)


def parse_spec(data: object, parsers: JobParsers, folder: Path = Path()) -> ClusterSpec:
    """Validate a spec given as plain data (loaded YAML); ``folder`` is where relative placement
    files are read. Raises :class:`FabricsimError` naming the key."""
    if not isinstance(data, dict):
        raise FabricsimError("spec", "does not hold a YAML mapping", "write fabric: ... and jobs: [...]")
    try:
        document = _SpecDocument.model_validate(data)
    except ValidationError as exc:
        raise _shape_error(exc) from None
    fabric = _text("fabric", document.fabric)
    routing = parse_routing(document.routing).value
    fidelity = parse_choice("fidelity", document.fidelity, ClusterFidelity).value
    background = None if document.background is None else _text("background", document.background)
    transport = None if document.transport is None else _text("transport", document.transport)
    ber = None if document.ber is None else _text("ber", str(document.ber))
    cc_params = None if document.cc_params is None else _cc_params(document.cc_params)
    for key, value in (("transport", transport), ("ber", ber), ("cc_params", cc_params)):
        if value is not None and fidelity != ClusterFidelity.PACKET:
            raise FabricsimError(key, "sets the packet network's transport", "add fidelity: packet")
    if not document.jobs:
        raise FabricsimError("jobs", "is empty", "give at least one job: - name: ..., command: ...")
    _check_names(document.jobs)
    jobs = tuple(_job(index, job, parsers, folder) for index, job in enumerate(document.jobs))
    _check_system(jobs)
    return ClusterSpec(fabric, routing, fidelity, background, jobs, transport, ber, cc_params)


def _cc_params(given: object) -> tuple[str, ...]:
    """``cc_params`` as ``NAME=VALUE`` texts, each checked as ``--cc-param`` checks it (name, type,
    range; :meth:`PacketParams.with_overrides`); a problem names ``cc_params``."""
    if isinstance(given, dict) and all(_scalar(k) and _scalar(v) for k, v in given.items()):
        texts = tuple(f"{name}={_value_text(value)}" for name, value in given.items())
    elif isinstance(given, list) and all(isinstance(text, str) for text in given):
        texts = tuple(given)
    else:
        raise FabricsimError("cc_params", f"must be a mapping NAME: VALUE (numbers or text), got {given!r}",
                             CC_PARAMS_HINT)  # fmt: skip
    if not texts:
        raise FabricsimError("cc_params", "is empty", "remove the key or give NAME: VALUE entries")
    try:
        PacketParams().with_overrides(parse_cc_params(texts))
    except FabricsimError as exc:
        raise cc_params_error(exc) from None
    return texts


def _scalar(value: object) -> bool:
    """A name or value ``--cc-param`` could have been given (YAML's true/false is not one)."""
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _value_text(value: str | int | float) -> str:
    """A YAML value as ``--cc-param`` reads it."""
    return repr(value) if isinstance(value, float) else str(value)


def cc_params_error(exc: FabricsimError) -> FabricsimError:
    """A ``--cc-param`` error as the spec's: naming ``cc_params`` and its YAML form."""
    fix = exc.fix.replace("--cc-param ", "cc_params: ").replace("--transport ", "transport: ")
    return FabricsimError("cc_params", exc.problem, fix or CC_PARAMS_HINT)


def load_spec(path: str | Path, parsers: JobParsers) -> ClusterSpec:
    """Read and validate the YAML cluster spec ``path`` (errors of the file itself name ``spec``)."""
    return parse_spec(read_yaml(Path(path), "spec"), parsers, Path(path).parent)
