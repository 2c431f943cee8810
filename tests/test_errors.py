"""The user-facing error helpers (layer L0)."""

from __future__ import annotations

from enum import StrEnum

import pytest

from fabricsim.errors import FabricsimError, did_you_mean, parse_choice


class Colour(StrEnum):
    RED = "red"
    GREEN = "green"


def test_parse_choice_accepts_members_and_any_case() -> None:
    assert parse_choice("colour", Colour.RED, Colour) is Colour.RED
    assert parse_choice("colour", " Green ", Colour) is Colour.GREEN


def test_parse_choice_names_the_field_and_suggests() -> None:
    with pytest.raises(FabricsimError) as info:
        parse_choice("colour", "gren", Colour)
    assert info.value.field == "colour"
    assert str(info.value).startswith("colour: unknown colour 'gren' (did you mean green")


def test_did_you_mean_lists_all_when_nothing_is_close() -> None:
    assert did_you_mean("zzz", ["b", "a"]) == "known: a, b"
