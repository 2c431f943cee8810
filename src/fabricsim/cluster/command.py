"""A cluster job's command line -> (kind, keywords of the public API function it calls) (layer L8).

A job is written as the fabricsim command a user would run alone (``train --model gpt3-175b
--system dgx-h100 --gpus 512 --tp 8 --global-batch 512 --seq-len 2048``), so nothing new has to be
learned. The options are not declared a second time: they are the named parameters of the API
function the command calls (``fabricsim.api.train`` for ``train``, ``api.infer`` for ``infer``,
``api.traffic`` for ``traffic``), passed in by the API layer (``apis``), and each ``--option`` is
the parameter's CLI spelling (:func:`fabricsim.specs.inputs.flag`: ``--global-batch`` is
``global_batch``). A value is converted by the parameter's annotation (``512`` -> 512 for an
integer, ``1.5`` for a float; text that does not convert stays text, for the API's typed check to
name) and then checked by that same typed check (:mod:`fabricsim.specs.inputs`), so a bad value
reads as it does on the command line. An on/off option is ``--x`` / ``--no-x``, without a value.

The rule for options that do not belong to one job (documented in the spec's help):

* refused, because the spec sets them once for the whole cluster: ``--fidelity``, ``--topology``,
  ``--routing``, ``--background``, ``--nic``, ``--transport``, ``--ber``, ``--cc-param`` (the spec's
  ``cc_params``), ``--placement`` (the job's ``placement:`` key);
  ``--json``, ``--html`` (given to ``fabricsim cluster`` itself); ``--trace`` (no per-job trace);
* refused, because a cluster run has no variability: ``--seeds``, ``--straggler``, ``--jitter``,
  ``--link-jitter``, ``--ecmp-rehash``, ``--seed`` (``traffic``'s ``--seed`` seeds its pattern and
  is kept);
* refused, because the engine does not model them (as ``train --fidelity flow`` refuses them):
  ``train --offload/--offload-tier``, ``infer --kv-spill/--kv-spill-capacity``;
* ``serve`` is refused: serving on the fabric comes with issue 24;
* ``traffic PATTERN --size S --hosts N [--seed K]`` is a synthetic tenant: the pattern's flows among
  its own N hosts (``--hosts`` is required: a tenant never takes the whole fabric implicitly).
"""

from __future__ import annotations

import inspect
import shlex
import types
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Annotated, Any

from pydantic import ConfigDict, ValidationError, create_model

from fabricsim.errors import FabricsimError, did_you_mean
from fabricsim.network.patterns import parse_pattern
from fabricsim.specs.inputs import flag, input_error
from fabricsim.units import parse_size

ENGINE_ONLY = "the analytic fidelity alone models it, a cluster runs the engine: drop it"
SPEC_OWNED = {
    "fidelity": "the spec's fidelity: sets it for the whole cluster",
    "topology": "the spec's fabric: is every job's fabric",
    "routing": "the spec's routing: sets it for the whole cluster",
    "background": "the spec's background: sets it for the whole cluster",
    "nic": "the spec's fabric: sets the links",
    "transport": "the spec's transport: sets it for the whole cluster",
    "ber": "the spec's ber: sets it for the whole cluster",
    "cc-param": "the spec's cc_params: sets them for the whole cluster",
    "placement": "give the job a placement: key",
    "json": "give --json to fabricsim cluster",
    "html": "give --html to fabricsim cluster",
    "trace": "a cluster run writes no per-job trace: drop it",
}
"""Options no job takes, with what to do instead: the spec sets them once for the whole cluster."""
VARIABILITY = ("seeds", "straggler", "jitter", "link-jitter", "ecmp-rehash", "seed")
"""train/infer options of the engine's variability, which a cluster run does not have."""


@dataclass(frozen=True, slots=True)
class CommandForm:
    """How one command reads as a cluster job, beyond its API function's signature."""

    positional: tuple[str, ...] = ()  # parameters given as bare words, in order (traffic's PATTERN)
    only: frozenset[str] | None = None  # the only parameters a job may set (None: every option)
    required: tuple[str, ...] = ()  # parameters a job must give although the API has a default
    refused: Mapping[str, str] = field(default_factory=dict)  # option -> why not, and the fix
    check: Callable[[dict[str, Any]], None] | None = None  # values the API checks only when it runs


def _check_traffic(kwargs: dict[str, Any]) -> None:
    """Early checks of a traffic tenant (the API parses these when it runs, after the typed check)."""
    parse_pattern(kwargs["pattern"])
    if parse_size(kwargs.get("size", "64MiB"), "size") == 0:
        raise FabricsimError("size", "must be at least 1 byte", "e.g. --size 64MiB")
    if kwargs["hosts"] < 2:
        problem = f"a pattern needs at least 2 hosts, got {kwargs['hosts']}"
        raise FabricsimError("hosts", problem, "use --hosts 2 or more")


FORMS: dict[str, CommandForm] = {
    "train": CommandForm(refused={"offload": ENGINE_ONLY, "offload-tier": ENGINE_ONLY}),
    "infer": CommandForm(refused={"kv-spill": ENGINE_ONLY, "kv-spill-capacity": ENGINE_ONLY}),
    "traffic": CommandForm(
        positional=("pattern",), only=frozenset({"pattern", "size", "hosts", "seed"}), required=("hosts",),
        check=_check_traffic,
    ),
}
"""The commands a job may be, by the first word of its command line."""
SERVE_LATER = (
    "serving on the fabric comes with issue 24",
    "run it alone with 'fabricsim serve', or give its decode step as an infer job: infer --batch B ...",
)


def _plain_types(hint: Any) -> tuple[type, ...]:
    """The classes an annotation accepts, with ``Annotated`` and ``X | None`` unwrapped."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        return _plain_types(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return tuple(t for arg in typing.get_args(hint) for t in _plain_types(arg) if t is not type(None))
    if isinstance(hint, type):
        return (hint,)
    return (origin,) if isinstance(origin, type) else ()


def _is_option(types_: tuple[type, ...]) -> bool:
    return any(t in (str, int, float, bool) or issubclass(t, Enum) for t in types_)


def command_options(function: Callable[..., Any], form: CommandForm) -> dict[str, tuple[str, tuple[type, ...]]]:
    """``--option`` spelling -> (API parameter name, its plain types) of every option of the command
    (not the positional words, not parameters such as callbacks that no command line can give)."""
    target = inspect.unwrap(function)
    hints = typing.get_type_hints(target, include_extras=True)
    out = {}
    for name, parameter in inspect.signature(target).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) or name in form.positional:
            continue
        if form.only is not None and name not in form.only:
            continue
        kinds = _plain_types(hints.get(name, str))
        if _is_option(kinds):
            out[flag(name)] = (name, kinds)
    return out


def _convert(text: str, kinds: tuple[type, ...]) -> object:
    """The command-line text of an option as the value its annotation asks for; text that does not
    convert stays text, for the API's typed check to refuse with its own words."""
    if str in kinds:
        return text
    for kind in (int, float):
        if kind in kinds:
            try:
                return kind(text)
            except ValueError:
                return text
    return text


class _Words:
    """The words of one command line, read left to right; errors name ``field``."""

    def __init__(self, words: list[str], field_name: str, kind: str) -> None:
        self.words, self.field, self.kind, self.at = words, field_name, kind, 0

    def error(self, problem: str, fix: str = "") -> FabricsimError:
        return FabricsimError(self.field, problem, fix)

    def next(self) -> str | None:
        if self.at >= len(self.words):
            return None
        self.at += 1
        return self.words[self.at - 1]

    def value_of(self, option: str, inline: str | None) -> str:
        if inline is not None:
            return inline
        value = self.next()
        if value is None or value.startswith("--"):
            raise self.error(f"--{option} needs a value", f"e.g. --{option} 8")
        return value


def _refusal(words: _Words, name: str, form: CommandForm, options: Mapping[str, object]) -> FabricsimError:
    """The error for ``--name``, which is not an option a job of this kind may give."""
    if name in SPEC_OWNED:
        return words.error(f"--{name} is not an option of a cluster job", SPEC_OWNED[name])
    if name in form.refused:
        return words.error(f"--{name} is not an option of a cluster job", form.refused[name])
    if name in VARIABILITY:
        return words.error(f"--{name} is not an option of a cluster job", "a cluster run has no variability: drop it")
    return words.error(f"{words.kind} has no option --{name}", did_you_mean(name, list(options)))


def _read_options(words: _Words, form: CommandForm, options: Mapping[str, tuple[str, tuple[type, ...]]]
                  ) -> tuple[dict[str, Any], list[str]]:
    """(keywords, bare words) of a command line after its command word."""
    kwargs: dict[str, Any] = {}
    bare: list[str] = []
    while (word := words.next()) is not None:
        if not word.startswith("--") or word == "--":
            bare.append(word)
            continue
        name, equals, inline = word[2:].partition("=")
        value: object
        negated = name.startswith("no-") and bool in options.get(name[3:], ("", ()))[1]
        known = options.get(name[3:] if negated else name)
        if known is None or name in SPEC_OWNED or name in form.refused:
            raise _refusal(words, name, form, options)
        parameter, kinds = known
        if bool in kinds:
            if equals:
                raise words.error(f"--{name} takes no value", f"write --{name} or --no-{name.removeprefix('no-')}")
            value = not negated
        else:
            value = _convert(words.value_of(name, inline if equals else None), kinds)
        if parameter in kwargs:
            raise words.error(f"--{flag(parameter)} is given twice", "give it once")
        kwargs[parameter] = value
    return kwargs, bare


def _required(function: Callable[..., Any], form: CommandForm, given: Mapping[str, Any]) -> list[str]:
    """The parameters the command needs and ``given`` lacks (the API's required ones it may set)."""
    target = inspect.unwrap(function)
    settable = {name for name, _ in command_options(function, form).values()} | set(form.positional)
    needed = [
        name for name, parameter in inspect.signature(target).parameters.items()
        if parameter.default is parameter.empty and name in settable
        and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
    ]
    return [name for name in (*needed, *form.required) if name not in given]


def _check_values(function: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """The API's own typed check (:mod:`fabricsim.specs.inputs`) of the given keywords, before any
    job runs: the same annotations, so a value is refused in the API's words."""
    hints = typing.get_type_hints(inspect.unwrap(function), include_extras=True)
    fields: dict[str, Any] = {name: (hints.get(name, Any), ...) for name in kwargs}
    model = create_model(f"{function.__name__}_job", __config__=ConfigDict(arbitrary_types_allowed=True), **fields)
    try:
        model.model_validate(kwargs)
    except ValidationError as exc:
        raise input_error(exc) from None


def option_error(field_name: str, exc: FabricsimError, options: Collection[str] | None = None) -> FabricsimError:
    """``exc`` as an error of the spec's ``field_name``; the field it names is written as an option
    (``--global-batch``) when it is one of ``options`` (None: any, as the API's errors name options)."""
    named = f"--{exc.field}" if options is None or exc.field in options else exc.field
    return FabricsimError(field_name, f"{named}: {exc.problem}", exc.fix)


def parse_command(text: str, apis: Mapping[str, Callable[..., Any]], field_name: str = "command"
                  ) -> tuple[str, dict[str, Any]]:
    """(kind, API keywords) of one job's command line; ``apis`` maps each kind of :data:`FORMS` to
    its public API function. Every problem is one FabricsimError naming ``field_name``. A leading
    ``fabricsim`` word is allowed (a command pasted from a shell)."""
    try:
        split = shlex.split(text)
    except ValueError as exc:
        raise FabricsimError(field_name, f"cannot split the command line: {exc}", "balance its quotes") from None
    if split[:1] == ["fabricsim"]:
        split = split[1:]
    if not split:
        raise FabricsimError(field_name, "is empty", "write a command, e.g. train --model ... --gpus 8 ...")
    kind = split[0]
    if kind == "serve":
        raise FabricsimError(field_name, *SERVE_LATER)
    if kind not in FORMS:
        hint = "a job is train, infer or traffic; " + did_you_mean(kind, FORMS)
        raise FabricsimError(field_name, f"unknown job command {kind!r}", hint)
    form, function = FORMS[kind], apis[kind]
    words = _Words(split[1:], field_name, kind)
    options = command_options(function, form)
    kwargs, bare = _read_options(words, form, options)
    if len(bare) > len(form.positional):
        raise words.error(f"unexpected word {bare[len(form.positional)]!r}", "options start with --")
    kwargs.update(zip(form.positional, bare, strict=False))
    missing = _required(function, form, kwargs)
    if missing:
        name = missing[0]
        how = name.upper() if name in form.positional else f"--{flag(name)}"
        raise words.error(f"{kind} needs {how}", "write the command as you would run it alone")
    try:
        _check_values(function, kwargs)
        if form.check is not None:
            form.check(kwargs)
    except FabricsimError as exc:
        raise option_error(field_name, exc, options) from None
    return kind, kwargs
