"""Request streams: arrival bounds from float64 time resolution, BOM and over-long integers (issue 27)."""

from __future__ import annotations

import math

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.workload.requests import MAX_ARRIVAL_S, TIME_RESOLUTION_S, check_arrival_rate, parse_trace


def test_the_horizon_is_where_float64_stops_resolving_a_microsecond():
    assert MAX_ARRIVAL_S + TIME_RESOLUTION_S > MAX_ARRIVAL_S  # still resolved at the horizon
    assert math.ulp(MAX_ARRIVAL_S) <= TIME_RESOLUTION_S < math.ulp(4 * MAX_ARRIVAL_S)  # lost well past it


@pytest.mark.parametrize(("rate", "count"), [(5e-324, 10), (1e-300, 1), (1e-9, 10)])
def test_a_rate_whose_arrivals_pass_the_horizon_is_refused(rate, count):
    with pytest.raises(FabricsimError, match="arrival-rate"):
        check_arrival_rate(rate, count)


@pytest.mark.parametrize(("rate", "count"), [(1e-6, 10), (math.inf, 10**6), (1.0, 10**6), (1e300, 1)])
def test_rates_within_the_horizon_pass(rate, count):
    check_arrival_rate(rate, count)


def test_a_csv_with_a_byte_order_mark_is_read():
    stream = parse_trace("\ufeffarrival_s,input_len,output_len\n0,10,5\n1,20,6\n", jsonl=False)
    assert list(stream.input_len) == [10, 20]


def test_an_over_long_integer_in_jsonl_names_its_line():
    text = '{"arrival_s": 0, "input_len": 5, "output_len": 5}\n{"arrival_s": 0, "input_len": ' + "9" * 5000 + "}\n"
    with pytest.raises(FabricsimError, match=r"line 2.*4300 digits"):
        parse_trace(text, jsonl=True)


def test_an_arrival_past_the_horizon_names_its_line():
    with pytest.raises(FabricsimError, match="line 2"):
        parse_trace(f"arrival_s,input_len,output_len\n{MAX_ARRIVAL_S * 2},10,5\n", jsonl=False)
