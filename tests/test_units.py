"""Unit parsing and formatting at the edges."""

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.units import format_bytes, format_rate, format_seconds, gbit_to_Bps, parse_size, to_GBps


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8GiB", 8 * 2**30),
        ("512MB", 512_000_000),
        ("1048576", 1_048_576),
        (1048576, 1_048_576),
        ("1.5e9", 1_500_000_000),
        ("16M", 16 * 2**20),
        ("4k", 4096),
        (" 2 giB ", 2 * 2**30),
        ("2 gIB", 2 * 2**30),
        ("4kB", 4000),
        ("7b", 7),
        ("0", 0),
        ("1B", 1),
        ("1.5KiB", 1536),
        ("1TB", 10**12),
        (2.0, 2),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["-1", "-5GiB", "abc", "", "1.5XB", "GiB", "1 2", "nan", "inf", "1e400", True, -3,
                                  float("nan"), "0x10", "1,000"])
def test_parse_size_rejects(text):
    with pytest.raises(FabricsimError) as info:
        parse_size(text, "size")
    assert info.value.field == "size"
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("text", "suggest"), [("400Gb", "GB"), ("1kb", "KB"), ("8Mb", "MB"), ("2 gib", "GiB"),
                                              ("1Tb", "TB"), ("3KIb", "KiB")])
def test_parse_size_refuses_bit_units_with_a_hint(text, suggest):
    with pytest.raises(FabricsimError) as info:
        parse_size(text, "size")
    assert info.value.field == "size" and suggest in info.value.fix and "400Gb/s = 50GB" in info.value.fix


def test_format_bytes_and_seconds():
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(3 * 2**30) == "3.00 GiB"
    assert format_bytes(2**50) == "1024.00 TiB"
    assert format_seconds(12.5e-6) == "12.50 µs"
    assert format_seconds(0.25) == "250.000 ms"
    assert format_seconds(3) == "3.000 s"


def test_rate_conversions():
    assert gbit_to_Bps(400) == pytest.approx(50e9)
    assert to_GBps(450e9) == pytest.approx(450.0)


def test_a_slow_rate_keeps_three_significant_digits_instead_of_printing_zero():
    assert [format_rate(x) for x in (0.0036, 42.5, 0.0, 1234.4, 2_000_000.0)] == [
        "0.0036", "42.5", "0", "1,234", "2,000,000"]
