"""User-facing errors (layer L0).

Every error that a user can cause is a :class:`FabricsimError` that names the offending field and
the fix, so the CLI can print it as one line and exit with status 2. Internal bugs stay ordinary
exceptions (and show a traceback), so the two are never confused.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import TypeVar


class FabricsimError(ValueError):
    """A bad input: ``field`` is what was wrong, ``fix`` says what to do instead."""

    def __init__(self, field: str, problem: str, fix: str = "") -> None:
        self.field = field
        self.problem = problem
        self.fix = fix
        message = f"{field}: {problem}"
        if fix:
            message += f" ({fix})"
        super().__init__(message)


def did_you_mean(name: str, choices: Iterable[str], limit: int = 3) -> str:
    """Return a 'did you mean ...' hint listing the closest known names, or all if none is close."""
    import difflib  # here: only a refused name needs it (start-up time, issue 27)

    options = sorted(choices)
    close = difflib.get_close_matches(name, options, n=limit, cutoff=0.5)
    if close:
        return "did you mean " + ", ".join(close) + "?"
    return "known: " + ", ".join(options)


def unknown_name(field: str, name: str, choices: Iterable[str]) -> FabricsimError:
    """Error for a name that is not in a catalog or registry."""
    return FabricsimError(field, f"unknown {field} {name!r}", did_you_mean(name, choices))


EnumT = TypeVar("EnumT", bound=Enum)


def parse_choice(field: str, text: object, choices: type[EnumT]) -> EnumT:
    """The member of the string enum ``choices`` whose value is ``text`` (trimmed, any case);
    otherwise a FabricsimError naming ``field`` and the close values."""
    if isinstance(text, choices):
        return text
    try:
        return choices(str(text).strip().lower())
    except ValueError:
        raise unknown_name(field, str(text), [c.value for c in choices]) from None
