"""Typed user inputs: the one edge where every number, name and count is checked (layer L1).

Each public API function declares its parameters with the ``Annotated`` types below and is wrapped
by :func:`edge`; the CLI, the sweep runner and Python callers all pass through that one check, so
code below the edge trusts its inputs. A type is: an integer or float parse (``bool`` refused,
``inf``/``NaN`` refused), a range, and where a value sizes work or memory a cap from
:mod:`fabricsim.limits` whose message says how to raise it. Every refusal is one
:class:`~fabricsim.errors.FabricsimError` naming the option as the CLI spells it (``global-batch``).

Adding an input is one parameter with one of these types on the API function.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import os
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    create_model,
    model_validator,
)

from fabricsim.errors import FabricsimError, parse_choice
from fabricsim.limits import CAPS, cap, check_cap, show, unset_probe
from fabricsim.specs.layout import Recompute
from fabricsim.units import parse_duration

SEED_LIMIT = 2**63  # seeds are stored in JSON and SQLite as signed 64-bit integers


def flag(name: str) -> str:
    """The CLI spelling of a parameter: ``global_batch`` -> ``global-batch``; an API name's unit
    suffix is not part of the option (``slo_ttft_s`` -> ``slo-ttft``)."""
    return name.removesuffix("_s").replace("_", "-")


def _integer(value: object, info: ValidationInfo) -> int:
    if type(value) is int:  # the common case first (isinstance of an ABC is slow; bool is not int here)
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
            return int(value)  # YAML/JSON 8.0: exact
        raise FabricsimError(flag(info.field_name or "value"), f"must be an integer, got {show(value)}")
    return int(value)


def _number(value: object, info: ValidationInfo) -> float:
    name = flag(info.field_name or "value")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise FabricsimError(name, f"must be a number, got {show(value)}")
    try:
        number = float(value)
    except OverflowError:  # a 10**400 integer
        number = math.inf
    if not math.isfinite(number):
        raise FabricsimError(name, f"must be a finite number, got {show(value)}")
    return number


def _at_least(low: int, cap_name: str | None) -> Callable[[int, ValidationInfo], int]:
    def check(value: int, info: ValidationInfo) -> int:
        if value < low:
            problem = "a positive integer" if low == 1 else f"an integer >= {low}"
            raise FabricsimError(flag(info.field_name or "value"), f"must be {problem}, got {show(value)}")
        if cap_name is not None and value > cap(cap_name):  # the option's name is spelled only for the error
            check_cap(flag(info.field_name or "value"), value, cap_name)
        return value

    check.bounds = (low, cap_name)  # type: ignore[attr-defined]  # read by the fast path of edge (_check_lines)
    return check


def Count(cap_name: str) -> Any:
    """A positive integer at most the cap ``cap_name``."""
    return Annotated[int, BeforeValidator(_integer), AfterValidator(_at_least(1, cap_name))]


def NonNegative(cap_name: str) -> Any:
    """An integer >= 0, at most the cap ``cap_name``."""
    return Annotated[int, BeforeValidator(_integer), AfterValidator(_at_least(0, cap_name))]


def _seed(value: int, info: ValidationInfo) -> int:
    if not 0 <= value < SEED_LIMIT:
        raise FabricsimError(flag(info.field_name or "seed"), f"must be in 0..2^63-1, got {show(value)}")
    return value


def _positive(value: float, info: ValidationInfo) -> float:
    if value <= 0:
        raise FabricsimError(flag(info.field_name or "value"), f"must be a positive number, got {show(value)}")
    return value


def _non_negative(value: float, info: ValidationInfo) -> float:
    if value < 0:
        raise FabricsimError(flag(info.field_name or "value"), f"must be >= 0, got {show(value)}")
    return value


def _fraction(value: float, info: ValidationInfo) -> float:
    if not 0 <= value <= 1:
        raise FabricsimError(flag(info.field_name or "value"), f"must be a fraction in [0, 1], got {show(value)}")
    return value


def _probability_below_one(value: float, info: ValidationInfo) -> float:
    if not 0 <= value < 1:
        raise FabricsimError(flag(info.field_name or "value"), f"must be in [0, 1), got {show(value)}")
    return value


Seed = Annotated[int, BeforeValidator(_integer), AfterValidator(_seed)]
PositiveFloat = Annotated[float, BeforeValidator(_number), AfterValidator(_positive)]
NonNegativeFloat = Annotated[float, BeforeValidator(_number), AfterValidator(_non_negative)]
Fraction = Annotated[float, BeforeValidator(_number), AfterValidator(_fraction)]
Probability = Annotated[float, BeforeValidator(_number), AfterValidator(_probability_below_one)]
"""A probability in [0, 1): a draft acceptance rate (at 1 every draft token is accepted and the
expected-yield formula (1 - A^(K+1)) / (1 - A) divides by zero)."""
Gpus = Count("GPUS")
Degree = Count("GPUS")  # a parallel degree (tp, pp, dp, cp, ep) never exceeds the GPU count cap
Tokens = Count("TOKENS")
Batch = Count("GLOBAL_BATCH")
Top = Count("TOP")

EnumT = TypeVar("EnumT", bound=Enum)


def Choice(choices: type[EnumT]) -> Any:
    """A member of the string enum ``choices``, parsed from its value with 'did you mean'."""

    def parse(value: object, info: ValidationInfo) -> EnumT:
        return parse_choice(flag(info.field_name or "value"), value, choices)

    parse.choices = choices  # type: ignore[attr-defined]  # read by the fast path of edge (_check_lines)
    return Annotated[choices, BeforeValidator(parse)]


class Fidelity(str, Enum):
    """Which model produces a number: closed forms, the event-driven engine, or flows on the topology."""

    ANALYTIC = "analytic"
    SIMULATE = "simulate"
    FLOW = "flow"
    PACKET = "packet"

    @property
    def on_fabric(self) -> bool:
        """Flow or packet: the step's collectives run on the fabric (:mod:`fabricsim.engine.fabric_loop`)."""
        return self in (Fidelity.FLOW, Fidelity.PACKET)


def _simulated(value: Fidelity, info: ValidationInfo) -> Fidelity:
    if value is Fidelity.ANALYTIC:
        raise FabricsimError(flag(info.field_name or "fidelity"), "this call simulates", "use simulate, flow or packet")
    return value


def _zero_stage(value: int, info: ValidationInfo) -> int:
    if value not in ZERO_STAGES:
        raise FabricsimError(flag(info.field_name or "zero"), f"stage must be 0, 1, 2 or 3, got {show(value)}")
    return value


ZERO_STAGES = (0, 1, 2, 3)
_zero_stage.values = ZERO_STAGES  # type: ignore[attr-defined]  # read by the fast path of edge (_check_lines)
ZeroStage = Annotated[int, BeforeValidator(_integer), AfterValidator(_zero_stage)]
FidelityChoice = Choice(Fidelity)
SimFidelity = Annotated[Fidelity, BeforeValidator(Choice(Fidelity).__metadata__[0].func), AfterValidator(_simulated)]
RecomputeMode = Choice(Recompute)

def _listed(value: object) -> object:
    return list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]


def Listed(item: Any) -> Any:
    """One value or a list of values of the type ``item`` (a search constraint), as a list."""
    return Annotated[list[item], BeforeValidator(_listed)]


class TrainConstraints(BaseModel):
    """What ``plan train`` may choose per layout dimension (None: every valid value); short names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: Listed(Degree) | None = None
    pp: Listed(Degree) | None = None
    dp: Listed(Degree) | None = None
    cp: Listed(Degree) | None = None
    ep: Listed(Degree) | None = None
    vpp: Listed(Degree) | None = None
    micro_batch: Listed(Batch) | None = None
    zero: Listed(ZeroStage) | None = None
    recompute: Listed(RecomputeMode) | None = None
    sequence_parallel: bool | None = None
    dtype: Listed(str) | None = None
    expert_tp: Listed(Degree) | None = None


def _batch_or_max(value: object, info: ValidationInfo) -> object:
    if isinstance(value, str) and value.strip().lower() == "max":
        return "max"
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            problem = f"must be an integer or max, got {show(value)}"
            raise FabricsimError(flag(info.field_name or "batch"), problem) from None
    number = _integer(value, info)
    return _at_least(1, "GLOBAL_BATCH")(number, info)


BatchOrMax = Annotated[int | str, BeforeValidator(_batch_or_max)]
def _duration(value: object, info: ValidationInfo) -> float:
    return parse_duration(value, flag(info.field_name or "duration"))  # type: ignore[arg-type]


Duration = Annotated[float, BeforeValidator(_duration)]
"""Seconds: a number, or text with a unit (``2s``, ``150ms``, ``40us``); finite and positive."""
Requests = Count("REQUESTS")
Refine = NonNegative("TOP")
Depth = Annotated[int, BeforeValidator(_integer), AfterValidator(_at_least(0, None))]  # e.g. MTP layers


class InferConstraints(BaseModel):
    """What ``plan infer`` may choose (None: every valid value); short layout names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tp: Listed(Degree) | None = None
    pp: Listed(Degree) | None = None
    ep: Listed(Degree) | None = None
    dtype: Listed(str) | None = None
    kv_dtype: Listed(str) | None = None
    batch: Batch | None = None
    max_batch: Batch | None = None


class ServingLoad(BaseModel):
    """A Poisson request stream served on planned layouts (``plan infer --arrival-rate``); without an
    arrival rate nothing is served, but ``requests`` and ``seed`` are still checked when given (never
    ignored). The default ``requests`` is checked against its cap only when a stream is served."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    arrival_rate: PositiveFloat | None = None
    requests: Requests = 500
    seed: Seed = 0

    @model_validator(mode="after")
    def _default_requests_within_cap(self) -> ServingLoad:
        # a lowered FABRICSIM_MAX_REQUESTS refuses the default too, but names it as the default: the
        # user gave no --requests to blame (a given one is refused by its own validator above)
        limit = cap("REQUESTS")
        if self.arrival_rate is not None and "requests" not in self.model_fields_set and self.requests > limit:
            problem = f"the default of {self.requests} requests per stream exceeds FABRICSIM_MAX_REQUESTS={limit}"
            raise FabricsimError("requests", problem, "raise FABRICSIM_MAX_REQUESTS or pass --requests N")
        return self


_CONFIG = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


@functools.lru_cache(maxsize=256)
def signature_model(function: Callable[..., Any]) -> tuple[type, tuple[str, ...]]:
    """(a pydantic model of ``function``'s named parameters, their names in order)."""
    hints = typing.get_type_hints(function, include_extras=True)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (hints.get(name, Any), default)
    model = create_model(f"{function.__name__}_inputs", __config__=_CONFIG, **fields)
    return model, tuple(fields)


def input_error(exc: ValidationError) -> FabricsimError:
    """The first problem of a pydantic error as one :class:`FabricsimError` naming the field."""
    first = exc.errors()[0]
    original = (first.get("ctx") or {}).get("error")
    if isinstance(original, FabricsimError):
        return original
    name = flag(".".join(str(part) for part in first["loc"])) or "input"
    if first["type"] == "missing":
        return FabricsimError(name, "is required", f"give --{name}")
    if first["type"] == "extra_forbidden":
        return FabricsimError(name, "is not an input of this command")
    message = str(first["msg"]).removeprefix("Value error, ")
    return FabricsimError(name, f"{message}, got {show(first.get('input'))}")


F = TypeVar("F", bound=Callable[..., Any])


def edge(function: F) -> F:
    """Validate every named argument of ``function`` against its annotated type before calling it.

    The validated (converted) values are what ``function`` receives; ``**kwargs`` pass through
    unchecked (the function forwards them to another edge function). Errors are one
    :class:`FabricsimError` naming the parameter as the CLI spells it.
    """
    signature = inspect.signature(function)
    fast: Callable[..., Any] | None = None  # built on the first call (type hints resolve once the module is loaded)
    # the generated caller takes keyword-only parameters by position too (see _fast_caller): more
    # positional arguments than the function takes are for the pydantic path to refuse
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in signature.parameters.values())

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        nonlocal fast
        if fast is None:
            fast = _fast_caller(function, signature) or _undecided
        try:
            result = fast(*args, **kwargs) if len(args) <= positional else _UNDECIDED
        except TypeError as exc:
            if exc.__traceback__ is None or exc.__traceback__.tb_next is not None:
                raise  # raised inside the function (its traceback goes on into the caller): not ours
            # raised by binding these arguments to the caller's signature (the caller never ran, so
            # the traceback ends in this frame): the pydantic path words it
            result = _UNDECIDED
        if result is not _UNDECIDED:
            return result
        return checked_by_model(function, signature, args, kwargs)

    return typing.cast(F, checked)


def checked_by_model(function: Callable[..., Any], signature: inspect.Signature, args: tuple, kwargs: dict) -> Any:
    """``function(*args, **kwargs)`` with its arguments validated by the pydantic model of its
    signature (:func:`signature_model`): the path of :func:`edge` that decides everything its fast
    path cannot and words every refusal."""
    model, names = signature_model(function)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise FabricsimError(function.__name__, str(exc)) from None
    extra = bound.arguments.pop(_var_keyword(signature), {}) if _var_keyword(signature) else {}
    try:
        values = model.model_validate(bound.arguments)
    except ValidationError as exc:
        raise input_error(exc) from None
    return function(**{name: getattr(values, name) for name in names}, **extra)


def _var_keyword(signature: inspect.Signature) -> str | None:
    return next((p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None)


# The fast path of :func:`edge`. Validating through the pydantic model costs tens of microseconds
# per call, more than an analytic estimate (issue 27: api.train in a loop). So for each edge
# function a caller with the function's own parameters is generated on its first call (its type
# hints resolve once its module is loaded), the way dataclasses generate ``__init__``: Python binds
# the arguments (no loop over them, no dicts), the body checks each given argument inline
# (``type(x) is int and 1 <= x <= cap`` for a count, a dict look-up for an enum choice,
# nothing for a None default) and calls the function with the checked values, by position
# (:func:`_positional_twin`). Generated code is the clear way here: the loop over the given
# arguments that built the call's dicts cost ~3 us of a ~14 us estimate; the generated caller costs
# ~1 us for api.train's common call (5 positional and 6 keyword arguments). Whatever the inline
# checks cannot decide (an error, a list, a value of another type or an int subclass, arguments the
# signature refuses) returns _UNDECIDED, and :func:`checked_by_model` decides and words it as before.
# The checks accept exactly what the model accepts and convert as it does
# (tests/specs/test_edge_fast_path.py compares the two on every kind of value).


class _UndecidedError(Exception):
    """The fast path cannot decide this value: the pydantic model does."""


class _Info:
    """What this module's validators read of pydantic's ``ValidationInfo``: the field name."""

    __slots__ = ("field_name",)

    def __init__(self, field_name: str) -> None:
        self.field_name = field_name


_UNDECIDED = object()  # what a generated caller returns where the pydantic path must decide
_NOT_GIVEN = object()  # the default of a generated parameter whose own default is not None
_PLAIN = (int, float, str, bool)
_CONTAINERS = (list, tuple, set, frozenset, dict)
_DEFAULTS = (type(None), int, float, str, bool, tuple, frozenset, Enum)
# names the generated code reads besides its own ``_edge_*`` ones: a parameter so named would hide them
_READ_NAMES = frozenset({"type", "int", "float", "str", "bool"})


def _undecided(*args: Any, **kwargs: Any) -> object:
    """The caller of a function without a fast path: the pydantic path decides every call."""
    return _UNDECIDED


def _cap_now(name: str) -> int:
    """The cap ``name``; -1 where ``FABRICSIM_MAX_<name>`` is not a valid cap: every value checked
    against it is then undecided, and the pydantic path raises the variable's error (a caller reads
    each of its caps on every call, also where no argument of that cap was given)."""
    try:
        return cap(name)
    except FabricsimError:
        return -1


def _validator(metadata: object) -> tuple[str, Callable[..., Any]] | None:
    """("before" | "after", a function of (value, info)) of a pydantic validator marker, else None."""
    kind = {BeforeValidator: "before", AfterValidator: "after"}.get(type(metadata))
    if kind is None:
        return None
    func = metadata.func  # type: ignore[attr-defined]
    code = getattr(func, "__code__", None)  # a plain function (inspect.signature costs more at start-up)
    if code is None or code.co_argcount != 2 or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None  # not a function of exactly (value, info): not one of this module's
    return kind, func


def _annotated(hint: Any) -> tuple[type, Callable[..., Any], Callable[..., Any] | None] | None:
    """(base, before, after) of one of this module's ``Annotated`` types: an int, float or enum base,
    one BeforeValidator and at most one AfterValidator; None for any other hint."""
    if typing.get_origin(hint) is not Annotated:
        return None
    base, *metadata = typing.get_args(hint)
    steps = [_validator(item) for item in metadata]
    kinds = [step[0] for step in steps if step is not None]
    if None in steps or kinds not in (["before"], ["before", "after"]):
        return None
    if not (base in (int, float) or (isinstance(base, type) and issubclass(base, Enum))):
        return None
    return base, steps[0][1], steps[1][1] if len(steps) == 2 else None  # type: ignore[index]


def _validated_as(base: type, before: Callable[..., Any], after: Callable[..., Any] | None) -> Callable[..., object]:
    """A function validating one plain value as pydantic validates ``Annotated[base, before, after]``:
    the same validator functions in the same order (the before one, the base's identity, the after
    one), raising :class:`_UndecidedError` where it cannot tell (a refusal included: pydantic words
    the first error of all fields)."""

    def validated(value: object, info: _Info) -> object:
        if type(value) not in _PLAIN:
            raise _UndecidedError
        try:
            value = before(value, info)
            if type(value) is not base:
                raise _UndecidedError  # pydantic would convert it: let it
            return value if after is None else after(value, info)
        except Exception:  # refused (or a validator needing more of ValidationInfo)
            raise _UndecidedError from None

    return validated


class _Source:
    """The text of one generated caller and the objects its names stand for (its globals)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.namespace: dict[str, object] = {
            "_edge_function": function,
            "_edge_undecided": _UNDECIDED,
            "_edge_not_given": _NOT_GIVEN,
            "_edge_undecided_error": _UndecidedError,
        }
        self.caps: dict[str, str] = {}  # cap name -> the local variable holding it for this call

    def constant(self, name: str, value: object) -> str:
        """The global name of ``value`` in the generated code."""
        self.namespace[f"_edge_{name}"] = value
        return f"_edge_{name}"

    def cap(self, cap_name: str) -> str:
        """The local variable holding the cap ``cap_name`` (read once per call, at the top)."""
        return self.caps.setdefault(cap_name, f"_edge_cap_{cap_name}")

    def cap_lines(self) -> list[str]:
        """Each cap read as :func:`fabricsim.limits.cap` reads it: its default unless
        ``FABRICSIM_MAX_<name>`` is set, which is told without a call where the environment allows
        (:func:`fabricsim.limits.unset_probe`); the variable may change between calls."""
        lines = []
        for cap_name, variable in self.caps.items():
            probe = unset_probe(cap_name)
            now = f"{self.constant('cap_now', _cap_now)}({cap_name!r})"
            if probe is None:
                lines.append(f"{variable} = {now}")
                continue
            environ, read, key = probe
            unset = (
                f"{self.constant('read', read)}({self.constant('key_' + cap_name, key)}) is None"
                f" and {self.constant('os', os)}.environ is {self.constant('environ', environ)}"
            )
            lines.append(f"{variable} = {CAPS[cap_name]} if {unset} else {now}")  # type: ignore[index]
        return lines


def _check_lines(name: str, hint: Any, source: _Source) -> list[str]:
    """Statements checking the argument ``name`` (not None where ``hint`` allows None) as pydantic
    validates it against ``hint``, rebinding it to the converted value; ``return _edge_undecided``
    where they cannot decide."""
    undecided = "return _edge_undecided"
    if hint is Any:
        return []
    if hint in _PLAIN:
        return [f"if type({name}) is not {hint.__name__}: {undecided}"]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [option for option in typing.get_args(hint) if option is not type(None)]
        if len(rest) == 1:
            return _check_lines(name, rest[0], source)
        plain = [option for option in rest if option in _PLAIN]
        if plain and all(option in _PLAIN or typing.get_origin(option) in _CONTAINERS for option in rest):
            # a value of exactly one of the plain types: pydantic's union (smart mode) takes it as is
            test = " and ".join(f"type({name}) is not {option.__name__}" for option in plain)
            return [f"if {test}: {undecided}"]
        return [undecided]
    steps = _annotated(hint)
    if steps is None:
        return [undecided]
    base, before, after = steps
    bounds = getattr(after, "bounds", None)
    if before is _integer and bounds is not None:  # a count: _integer returns a plain int as is
        low, cap_name = bounds
        within = f"{name} >= {low}" if cap_name is None else f"{low} <= {name} <= {source.cap(cap_name)}"
        return [f"if not (type({name}) is int and {within}): {undecided}"]
    values = getattr(after, "values", None)
    if before is _integer and values is not None:  # one of a few integers (a ZeRO stage)
        return [f"if not (type({name}) is int and {name} in {source.constant('values_' + name, values)}): {undecided}"]
    if after is None and getattr(before, "choices", None) is base:  # a Choice: parse_choice of its exact value
        members: dict[object, object] = {member.value: member for member in base}
        members.update({member: member for member in base})
        return [
            f"if type({name}) is not str and type({name}) is not {source.constant('enum_' + name, base)}: {undecided}",
            f"{name} = {source.constant('members_' + name, members)}.get({name})",
            f"if {name} is None: {undecided}",
        ]
    validated = source.constant("validated_" + name, _validated_as(base, before, after))
    info = source.constant("info_" + name, _Info(name))
    return ["try:", f"    {name} = {validated}({name}, {info})", "except _edge_undecided_error:", f"    {undecided}"]


def _allows_none(hint: Any) -> bool:
    return hint is Any or (
        typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)
    )


def _indented(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def _fast_caller(function: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any] | None:
    """The generated caller of ``function`` (see above), or None where it has none: a parameter kind,
    default or name it does not handle."""
    hints = typing.get_type_hints(function, include_extras=True)
    source = _Source(function)
    # The caller's parameters are the function's, in order, each positional-or-keyword (Python fills
    # a missing one from the defaults tuple; a keyword-only default costs a dict look-up, ~0.1 us
    # for api.train's); edge sends calls with too many positional arguments to the pydantic path.
    parameters: list[str] = []
    body: list[str] = []
    named: list[tuple[str, bool]] = []  # (name, keyword-only) of the function's named parameters
    var_keyword = None
    defaulted = False  # a parameter with a default came before
    for name, parameter in signature.parameters.items():
        if name in _READ_NAMES or name.startswith("_edge_"):
            return None
        if parameter.kind is parameter.VAR_KEYWORD:
            var_keyword = name  # passed through unchecked
            continue
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            return None
        named.append((name, parameter.kind is parameter.KEYWORD_ONLY))
        hint = hints.get(name, Any)
        checks = _check_lines(name, hint, source)
        given = [f"if {name} is not None:", *_indented(checks)] if checks and _allows_none(hint) else checks
        default = parameter.default
        if default is parameter.empty and not defaulted:
            parameters.append(name)
            body += given
            continue
        defaulted = True
        if default is parameter.empty:  # a required keyword-only parameter after defaults
            parameters.append(f"{name}=_edge_not_given")
            body += [f"if {name} is _edge_not_given: return _edge_undecided", *given]  # missing: the model says so
        elif not isinstance(default, _DEFAULTS):
            return None  # a mutable default pydantic would copy
        elif default is None and _allows_none(hint):
            parameters.append(f"{name}=None")
            body += given  # a given None is the default: the model passes it as is
        elif not checks:
            parameters.append(f"{name}={source.constant('default_' + name, default)}")
        else:  # pydantic passes a default unvalidated: only a given value is checked
            parameters.append(f"{name}=_edge_not_given")
            body += [f"if {name} is _edge_not_given:", f"    {name} = {source.constant('default_' + name, default)}"]
            body += ["else:", *_indented(given)]
    twin = _positional_twin(function, signature)
    if twin is not None:  # every named argument in order, by position (see _positional_twin)
        source.namespace["_edge_function"] = twin
        call = [name for name, _ in named]
    else:
        call = [f"{name}={name}" if keyword_only else name for name, keyword_only in named]
    if var_keyword is not None:
        parameters.append(f"**{var_keyword}")
        call.append(f"**{var_keyword}")
    caller_name = function.__name__ if function.__name__.isidentifier() else "caller"  # its name in a traceback
    if caller_name.startswith("_edge_"):
        caller_name = "caller"
    lines = [
        f"def {caller_name}({', '.join(parameters)}):",
        *_indented(source.cap_lines()),
        *_indented(body),
        f"    return _edge_function({', '.join(call)})",
    ]
    text = "\n".join(lines)
    exec(compile(text, f"<edge of {function.__qualname__}>", "exec"), source.namespace)  # our text, from the signature
    caller = source.namespace[caller_name]
    caller.__edge_source__ = text  # type: ignore[attr-defined]  # for a reader (and the tests)
    return caller


def _positional_twin(function: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any] | None:
    """``function`` with its keyword-only parameters made positional: the same code (the same body,
    locals, file and lines in a traceback), called with every named argument by position in the
    order of ``signature``; None where ``function``'s code does not have exactly those parameters
    (a wrapper whose signature is another function's, positional-only or ``*args`` parameters).

    Why: a generated caller passes all of the function's arguments, the checked given ones and the
    defaults. By keyword Python finds each parameter by its name, ~35 ns an argument here (~1.1 us
    for the 31 keyword-only parameters of ``api.train``, a third of the edge); by position it copies
    them (~0.15 us). A code object lists its keyword-only parameters right after the positional
    ones, so counting them as positional (``CodeType.replace``) changes only how a call binds them.
    """
    code = getattr(function, "__code__", None)
    names = tuple(
        name for name, parameter in signature.parameters.items()
        if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    )
    if (
        not isinstance(code, types.CodeType)
        or code.co_posonlyargcount
        or code.co_flags & inspect.CO_VARARGS
        or code.co_argcount + code.co_kwonlyargcount != len(names)
        or code.co_varnames[: len(names)] != names
    ):
        return None
    positional = code.replace(co_argcount=len(names), co_kwonlyargcount=0)
    return types.FunctionType(positional, function.__globals__, function.__name__, None, function.__closure__)
