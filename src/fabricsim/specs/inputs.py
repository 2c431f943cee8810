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
from fabricsim.limits import cap, check_cap, show
from fabricsim.specs.edge_caller import UNDECIDED, fast_caller, no_fast_path
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


_integer.keeps_plain_int = True  # type: ignore[attr-defined]  # read by the fast path of edge (edge_caller)


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

    check.bounds = (low, cap_name)  # type: ignore[attr-defined]  # read by the fast path of edge (edge_caller)
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

    parse.choices = choices  # type: ignore[attr-defined]  # read by the fast path of edge (edge_caller)
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
_zero_stage.values = ZERO_STAGES  # type: ignore[attr-defined]  # read by the fast path of edge (edge_caller)
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
    fast: Callable[..., Any] | None = None  # edge_caller.fast_caller, built on the first call
    # the generated caller takes keyword-only parameters by position too: more positional arguments
    # than the function takes are for the pydantic path to refuse
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in signature.parameters.values())

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        nonlocal fast
        if fast is None:
            fast = fast_caller(function, signature) or no_fast_path
        try:
            result = fast(*args, **kwargs) if len(args) <= positional else UNDECIDED
        except TypeError as exc:
            if exc.__traceback__ is None or exc.__traceback__.tb_next is not None:
                raise  # raised inside the function (its traceback goes on into the caller): not ours
            # raised by binding these arguments to the caller's signature (the caller never ran, so
            # the traceback ends in this frame): the pydantic path words it
            result = UNDECIDED
        if result is not UNDECIDED:
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
