"""textfile: values a parser cannot build are one-line errors naming the option (issue 27)."""

from __future__ import annotations

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.textfile import parse_json, parse_yaml, read_text

HUGE = "9" * 5000  # past sys.get_int_max_str_digits() (4,300 by default)


def test_an_over_long_integer_in_yaml():
    with pytest.raises(FabricsimError, match=r"^prices: p.yaml holds an integer of more than \d+ digits"):
        parse_yaml(f"gpu: {HUGE}\n", "prices", "p.yaml")


def test_an_impossible_date_in_yaml():
    with pytest.raises(FabricsimError, match="unreadable value"):
        parse_yaml("released: 2024-13-45\n", "model", "m.yaml")


def test_an_over_long_integer_in_json():
    with pytest.raises(FabricsimError, match=r"^model: c.json holds an integer of more than \d+ digits"):
        parse_json(f'{{"hidden_size": {HUGE}}}', "model", "c.json")


def test_json_errors_keep_their_line():
    with pytest.raises(FabricsimError, match=r"malformed JSON in c\.json at line 2"):
        parse_json('{"a": 1,\n', "model", "c.json")


def test_a_byte_order_mark_is_dropped(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert read_text(path, "spec") == "a: 1\n"
    path.write_bytes(b"\xef\xbb\xbfa: \xff\n")
    with pytest.raises(FabricsimError, match=r"byte 6\b"):  # counted in the file, the mark included
        read_text(path, "spec")
