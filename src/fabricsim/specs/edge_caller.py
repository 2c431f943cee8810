"""The fast path of :func:`fabricsim.specs.inputs.edge`: a generated caller per edge function (layer L1).

Validating through the pydantic model costs tens of microseconds per call, more than an analytic
estimate (issue 27: api.train in a loop). So for each edge function a caller with the function's
own parameters is generated on its first call (its type hints resolve once its module is loaded),
the way dataclasses generate ``__init__``: Python binds the arguments (no loop over them, no
dicts), the body checks each given argument inline (``type(x) is int and 1 <= x <= cap`` for a
count, a dict look-up for an enum choice, nothing for a None default) and calls the function with
the checked values, by position (:func:`positional_twin`). Generated code is the clear way here:
the loop over the given arguments that built the call's dicts cost ~3 us of a ~14 us estimate; the
generated caller and ``edge``'s wrapper cost ~1 us for api.train's common call (5 positional and 6
keyword arguments: ~0.35 us the wrapper's ``*args, **kwargs`` call, ~0.3 us binding the caller
and calling the function, ~0.1 us the caps, ~0.25 us the checks). Whatever the inline checks cannot
decide (an error, a list, a value of another type or an int subclass, arguments the signature
refuses) returns :data:`UNDECIDED`, and :func:`fabricsim.specs.inputs.checked_by_model` decides and
words it as before. The checks accept exactly what the model accepts and convert as it does
(tests/specs/test_edge_fast_path.py compares the two on every kind of value).

``edge`` keeps its own ``(*args, **kwargs)`` wrapper in front of the caller: arguments that a
signature refuses (a keyword given twice, one unknown) raise Python's TypeError where the call is
made, and only a frame above the caller can turn that into the pydantic path's one-line error.
"""

from __future__ import annotations

import inspect
import os
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from fabricsim.errors import FabricsimError
from fabricsim.limits import CAPS, cap, unset_probe


class _UndecidedError(Exception):
    """The fast path cannot decide this value: the pydantic model does."""


class _Info:
    """What the validators of :mod:`fabricsim.specs.inputs` read of pydantic's ``ValidationInfo``: the field name."""

    __slots__ = ("field_name",)

    def __init__(self, field_name: str) -> None:
        self.field_name = field_name


UNDECIDED = object()  # what a generated caller returns where the pydantic path must decide
_NOT_GIVEN = object()  # the default of a generated parameter whose own default is not None
_PLAIN = (int, float, str, bool)
_CONTAINERS = (list, tuple, set, frozenset, dict)
_DEFAULTS = (type(None), int, float, str, bool, tuple, frozenset, Enum)
# names the generated code reads besides its own ``_edge_*`` ones: a parameter so named would hide them
_READ_NAMES = frozenset({"type", "int", "float", "str", "bool"})


def no_fast_path(*args: Any, **kwargs: Any) -> object:
    """The caller of a function without a fast path: the pydantic path decides every call."""
    return UNDECIDED


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
        return None  # not a function of exactly (value, info): not one of fabricsim.specs.inputs'
    return kind, func


def _annotated(hint: Any) -> tuple[type, Callable[..., Any], Callable[..., Any] | None] | None:
    """(base, before, after) of one of the ``Annotated`` types of :mod:`fabricsim.specs.inputs`: an
    int, float or enum base, one BeforeValidator and at most one AfterValidator; None for any other hint."""
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
            "_edge_undecided": UNDECIDED,
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
    plain_int = getattr(before, "keeps_plain_int", False)  # the integer parse: a plain int comes back as is
    if plain_int and bounds is not None:  # a count
        low, cap_name = bounds
        within = f"{name} >= {low}" if cap_name is None else f"{low} <= {name} <= {source.cap(cap_name)}"
        return [f"if not (type({name}) is int and {within}): {undecided}"]
    values = getattr(after, "values", None)
    if plain_int and values is not None:  # one of a few integers (a ZeRO stage)
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


def _parameter(
    parameter: inspect.Parameter, hint: Any, after_default: bool, source: _Source
) -> tuple[str, list[str]] | None:
    """(the generated caller's parameter, the statements checking it) for one named parameter of the
    function; None for a default pydantic would copy (a mutable one)."""
    name, default = parameter.name, parameter.default
    checks = _check_lines(name, hint, source)
    given = [f"if {name} is not None:", *_indented(checks)] if checks and _allows_none(hint) else checks
    if default is parameter.empty and not after_default:
        return name, given
    if default is parameter.empty:  # a required keyword-only parameter after defaults: missing, the model says so
        return f"{name}=_edge_not_given", [f"if {name} is _edge_not_given: return _edge_undecided", *given]
    if not isinstance(default, _DEFAULTS):
        return None
    if default is None and _allows_none(hint):
        return f"{name}=None", given  # a given None is the default: the model passes it as is
    if not checks:
        return f"{name}={source.constant('default_' + name, default)}", []
    # pydantic passes a default unvalidated: only a given value is checked
    unset = [f"if {name} is _edge_not_given:", f"    {name} = {source.constant('default_' + name, default)}"]
    return f"{name}=_edge_not_given", [*unset, "else:", *_indented(given)]


def fast_caller(function: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any] | None:
    """The generated caller of ``function`` (see the module's docstring), or None where it has none:
    a parameter kind, default or name it does not handle.

    The caller's parameters are the function's, in order, each positional-or-keyword (Python fills a
    missing one from the defaults tuple; a keyword-only default costs a dict look-up, ~0.1 us for
    api.train's): :func:`fabricsim.specs.inputs.edge` sends it no more positional arguments than the
    function takes."""
    hints = typing.get_type_hints(function, include_extras=True)
    source = _Source(function)
    parameters: list[str] = []
    body: list[str] = []
    named: list[tuple[str, bool]] = []  # (name, keyword-only) of the function's named parameters
    var_keyword = None
    after_default = False  # a parameter with a default came before
    for name, parameter in signature.parameters.items():
        if name in _READ_NAMES or name.startswith("_edge_"):
            return None
        if parameter.kind is parameter.VAR_KEYWORD:
            var_keyword = name  # passed through unchecked
            continue
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            return None
        named.append((name, parameter.kind is parameter.KEYWORD_ONLY))
        generated = _parameter(parameter, hints.get(name, Any), after_default, source)
        if generated is None:
            return None
        parameters.append(generated[0])
        body += generated[1]
        after_default = after_default or parameter.default is not parameter.empty
    twin = positional_twin(function, signature)
    if twin is not None:  # every named argument in order, by position (see positional_twin)
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


def positional_twin(function: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any] | None:
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
