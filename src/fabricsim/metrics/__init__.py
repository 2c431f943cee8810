"""Immutable results and the JSON contract of DESIGN.md (layer L7).

Each result is a frozen dataclass whose ``to_json()`` gives exactly the keys the contract names,
with units in the key names. Rendering (tables) lives in ``report``; files in ``io``.

The contract is declared once, by the fields: :func:`contract_json` turns each field into the key
of its name (name/value pairs become objects, tuples of results lists of their JSON); a field's
``metadata`` says where it differs (``FLATTEN``: its pairs are keys of the result itself, e.g.
the energy figures; ``SKIP``: not serialised; ``EMPTY_AS_NULL``: an empty value is ``null``).
Adding a field adds its key; no ``to_json`` repeats the field list (those whose JSON is shaped
unlike their fields, such as ``TrafficResult``, still spell it out).

:class:`TrainResult` is defined here; the other results in :mod:`fabricsim.metrics.others`, loaded
on first use and reachable here by name (``fabricsim.metrics.InferResult``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol

FLATTEN = {"json": "flatten"}
SKIP = {"json": "skip"}
EMPTY_AS_NULL = {"json": "empty-as-null"}


def _pairs(annotation: object) -> bool:
    return str(annotation).replace(" ", "").startswith("tuple[tuple[str,")


@lru_cache(maxsize=256)
def _plan(kind: type) -> tuple[tuple[str, object, bool], ...]:
    """(name, JSON role, holds name/value pairs) per field of the result class ``kind``, in order:
    read once per class (per call it was most of an estimate's ``to_json``, issue 27)."""
    return tuple((item.name, item.metadata.get("json"), _pairs(item.type)) for item in fields(kind))


def contract_json(result: Any) -> dict[str, object]:
    """The JSON object of a result dataclass, from its fields (see the module docstring)."""
    fast = _fast_plan(type(result))
    return _field_json(result) if fast is None else _fast_json(result, fast)


def _field_json(result: Any) -> dict[str, object]:
    """:func:`contract_json` field by field (the reference the one-step build must equal)."""
    out: dict[str, object] = {}
    for name, role, pairs in _plan(type(result)):
        if role == "skip":
            continue
        value = getattr(result, name)
        if role == "empty-as-null" and not value:
            value = None
        elif value is not None and pairs:
            value = dict(value)
        elif isinstance(value, tuple) and value and hasattr(value[0], "to_json"):
            value = [entry.to_json() for entry in value]
        if role == "flatten":
            out.update(value or {})  # type: ignore[call-overload]
        else:
            out[name] = value
    return out


_SCALARS = frozenset(f"{kind}{none}" for kind in ("str", "int", "float", "bool") for none in ("", " | None"))


@lru_cache(maxsize=256)
def _fast_plan(kind: type) -> tuple[Any, tuple[str, ...], tuple[tuple[str, object, bool], ...], Any] | None:
    """:func:`contract_json`'s plan of ``kind`` as (a getter of its keyed fields' values, their
    names, the fields whose value needs converting, a getter of the fields to flatten), where the
    JSON object can be built in one step: at least two keyed fields and every flattened field after
    them (so the keys keep the fields' order). None otherwise (the field-by-field loop builds it).
    A field annotated as a plain scalar (``str``, ``int``, ``float``, ``bool``, or None) is taken as
    it is; every other one is converted as the loop converts it. (Issue 27: ``to_json`` was a
    tenth of an in-process ``train``.)"""
    plan = [(item, item.metadata.get("json")) for item in fields(kind) if item.metadata.get("json") != "skip"]
    flattened = [item.name for item, role in plan if role == "flatten"]
    keyed = [item for item, role in plan if role != "flatten"]
    if len(keyed) < 2 or any(role != "flatten" for _, role in plan[len(keyed):]):
        return None
    convert = tuple(
        (item.name, role, _pairs(item.type))
        for item, role in plan
        if role != "flatten" and (role is not None or str(item.type) not in _SCALARS)
    )
    names = tuple(item.name for item in keyed)
    flatten = attrgetter(*flattened) if len(flattened) > 1 else None
    if len(flattened) == 1:
        one = attrgetter(flattened[0])
        flatten = lambda result: (one(result),)  # noqa: E731
    return attrgetter(*names), names, convert, flatten


def _fast_json(result: Any, plan: tuple[Any, tuple[str, ...], tuple[tuple[str, object, bool], ...], Any]) -> dict:
    getter, names, convert, flatten = plan
    out = dict(zip(names, getter(result), strict=True))
    for name, role, pairs in convert:
        value = out[name]
        if role == "empty-as-null" and not value:
            out[name] = None
        elif value is not None and pairs:
            out[name] = dict(value)
        elif isinstance(value, tuple) and value and hasattr(value[0], "to_json"):
            out[name] = [entry.to_json() for entry in value]
    if flatten is not None:
        for value in flatten(result):
            if value:
                out.update(value)
    return out


class TrainSource(Protocol):
    """What a deferred :class:`TrainResult` is built from (:meth:`TrainResult.deferred`): a
    producer's own record of one estimate, able to give the result's field values (in field order)
    and its JSON object (equal, key order included, to :func:`contract_json` of those values)."""

    def values(self) -> tuple: ...

    def to_json(self) -> dict[str, object]: ...


class _Deferred:
    """The one slot a deferred result keeps besides its fields: its :class:`TrainSource` until the
    fields are filled (then None; unset on a result built from its fields)."""

    __slots__ = ("_source",)


@dataclass(frozen=True, slots=True)
class TrainResult(_Deferred):
    """One training-step estimate (``fabricsim train``). ``time_breakdown_s`` adds up to
    ``step_time_s``; ``memory_breakdown_bytes`` adds up to ``memory_per_gpu_bytes`` (most loaded GPU).
    Model FLOPs exclude recomputation (MFU); hardware FLOPs include it (HFU).

    Built from its fields as any dataclass, or deferred (:meth:`deferred`, what ``api.train`` does):
    then no field is stored until one is read, and ``to_json`` builds the JSON object straight from
    the source. Issue 27: the ~40 objects of a result's tables (its name/value pairs) cost half of
    an in-process ``api.train`` + ``to_json``, building them and freeing them, while most callers
    only want the JSON. The first read of any field fills them all, once; equality, hashing,
    ``repr``, ``dataclasses.replace``/``fields``/``asdict``, copies and pickles read the fields and
    so see a plain result."""

    model: str
    system: str
    gpus: int
    global_batch: int
    seq_len: int
    microbatches: int
    step_time_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    fits: bool
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    memory_breakdown_bytes: tuple[tuple[str, float], ...]
    time_breakdown_s: tuple[tuple[str, float], ...]
    layout: tuple[tuple[str, object], ...]
    fidelity: str = "analytic"
    options: tuple[tuple[str, object], ...] = ()  # framework settings (TrainingOptions.as_dict)
    energy: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)  # power_W, ... (cost.energy)
    # offload only: memory_breakdown_bytes_by_tier ({tier: {kind: bytes}}), memory_capacity_bytes_by_tier
    # ({tier: bytes}) and memory_overflow_tiers
    tiers: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)

    @classmethod
    def deferred(cls, source: TrainSource) -> TrainResult:
        """A result whose fields are ``source.values()``, read on first use (class docstring)."""
        result = _NEW(cls)
        _SET_SOURCE(result, source)
        return result

    def __getattr__(self, name: str) -> object:
        # only reached for an attribute not stored: a deferred result's field, or a missing name
        if name == "_source":
            return None  # a result built from its fields
        if name not in _TRAIN_FIELDS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        source = self._source
        if source is not None:  # None: another thread filled the fields meanwhile
            for field_name, value in zip(_TRAIN_FIELDS, source.values(), strict=True):
                _SET(self, field_name, value)
            _SET_SOURCE(self, None)
        return _GET(self, name)

    def to_json(self) -> dict[str, object]:
        source = self._source
        return contract_json(self) if source is None else source.to_json()


_TRAIN_FIELDS = tuple(item.name for item in fields(TrainResult))
_NEW = object.__new__
_SET = object.__setattr__
_GET = object.__getattribute__
_SET_SOURCE = _Deferred._source.__set__  # type: ignore[attr-defined]


__all__ = [
    "EMPTY_AS_NULL",
    "FLATTEN",
    "SKIP",
    "ClusterJobResult",
    "ClusterResult",
    "CollectiveResult",
    "InferResult",
    "PlanEntry",
    "PlanResult",
    "ServeResult",
    "SimulatedInferResult",
    "SimulatedTrainResult",
    "SweepSummary",
    "TierLoad",
    "TrafficResult",
    "TrainResult",
    "TrainSource",
    "contract_json",
]
# The results of every other command, created on first use (issue 27): a one-off ``train`` builds
# only :class:`TrainResult`, and each frozen dataclass costs ~0.7 ms of CPU to create.
_OTHERS = frozenset(__all__) - {"EMPTY_AS_NULL", "FLATTEN", "SKIP", "TrainResult", "TrainSource", "contract_json"}


def __getattr__(name: str) -> Any:  # PEP 562: ``from fabricsim.metrics import InferResult`` works
    if name not in _OTHERS:
        raise AttributeError(f"module 'fabricsim.metrics' has no attribute {name!r}")
    from fabricsim.metrics import others

    value = getattr(others, name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_OTHERS})


if TYPE_CHECKING:  # static checkers see the real names
    from fabricsim.metrics.others import (
        ClusterJobResult,
        ClusterResult,
        CollectiveResult,
        InferResult,
        PlanEntry,
        PlanResult,
        ServeResult,
        SimulatedInferResult,
        SimulatedTrainResult,
        SweepSummary,
        TierLoad,
        TrafficResult,
    )
