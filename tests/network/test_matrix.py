"""Traffic-matrix files: CSV or JSON Lines rows of src, dst, bytes, start_s, every row checked (issue 26)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.network.matrix import parse_matrix


def test_csv_and_json_lines_give_the_same_flows():
    csv = "\ufeffsrc, dst, bytes, start_s\n0,1,1e6,0\n2,1,1500.5,2e-6\n3,0,64,\n"
    jsonl = '{"src": 0, "dst": 1, "bytes": 1e6, "start_s": 0}\n\n{"src": 2, "dst": 1, "bytes": 1500.5, ' \
        '"start_s": 2e-6}\n{"src": 3, "dst": 0, "bytes": 64}\n'
    for flows in (parse_matrix(csv, False, 4), parse_matrix(jsonl, True, 4)):
        assert flows.src.tolist() == [0, 2, 3] and flows.dst.tolist() == [1, 1, 0]
        assert flows.size_bytes.tolist() == [1e6, 1501.0, 64.0]  # whole bytes, rounded up
        assert flows.start_s.tolist() == [0.0, 2e-6, 0.0]  # a missing start is 0
        assert np.unique(flows.label).size == 3  # one connection per row


@pytest.mark.parametrize(
    ("text", "jsonl", "message"),
    [
        ("src,dst,bytes,start_s\n0,1,1e6,0\n0,4,1e6,0\n", False, "line 3: dst 4 is not a host in 0..3"),
        ("src,dst,bytes,start_s\n-1,1,1e6,0\n", False, "line 2: src -1 is not a host"),
        ("src,dst,bytes,start_s\n0.5,1,1e6,0\n", False, "line 2: src 0.5 is not a host"),
        ("src,dst,bytes,start_s\n1,1,1e6,0\n", False, "line 2: src and dst are both host 1"),
        ("src,dst,bytes,start_s\n0,1,0,0\n", False, "line 2: bytes must be a finite number > 0"),
        ("src,dst,bytes,start_s\n0,1,nan,0\n", False, "line 2: bytes must be a finite number > 0"),
        ("src,dst,bytes,start_s\n0,1,1e300,0\n", False, "line 2: bytes 1e\\+300 exceed the cap"),
        ("src,dst,bytes,start_s\n0,1,5,-1e-9\n", False, "line 2: start_s must be a finite time >= 0"),
        ("src,dst,bytes,start_s\n0,1,5,inf\n", False, "line 2: start_s must be a finite time >= 0"),
        ("src,dst,bytes,start_s\n0,1,lots,0\n", False, "line 2: bytes must be a number"),
        ("src,dst,start_s\n0,1,0\n", False, "line 2: missing bytes"),
        ("src,dst,bytes,when\n0,1,5,0\n", False, "line 2: unknown key 'when'"),
        ("src,dst,bytes,start_s\n", False, "no flows"),
        ('{"src": 0, "dst": 1, "bytes": 5}\n[1, 2]\n', True, "line 2: not a record"),
        ('{"src": 0, "dst": 1, "bytes": 5}\n{"src": 0,\n', True, "line 2: not valid JSON"),
        ('{"src": 0, "dst": 1, "bytes": true}\n', True, "line 1: bytes must be a number"),
    ],
)
def test_a_bad_row_is_one_line_naming_its_line(text, jsonl, message):
    with pytest.raises(FabricsimError, match=message) as caught:
        parse_matrix(text, jsonl, 4)
    assert caught.value.field == "matrix" and "\n" not in str(caught.value)


def test_an_optional_class_column_gives_each_flows_traffic_class():
    """Packet fidelity's traffic classes (issue 26): a ``class`` column (a missing cell: 0); none in
    the file, no classes (the params' rule applies); a class outside 0..7 is refused naming its line."""
    csv = "src,dst,bytes,start_s,class\n0,1,1e6,0,1\n2,1,1e6,0,\n"
    jsonl = '{"src": 0, "dst": 1, "bytes": 1e6, "class": 1}\n{"src": 2, "dst": 1, "bytes": 1e6}\n'
    for flows in (parse_matrix(csv, False, 4), parse_matrix(jsonl, True, 4)):
        assert flows.traffic_class.tolist() == [1, 0]
    assert parse_matrix("src,dst,bytes\n0,1,1e6\n", False, 4).traffic_class is None
    for bad in ("8", "-1", "0.5"):
        with pytest.raises(FabricsimError, match=f"line 2: class {bad} is not a traffic class in 0..7"):
            parse_matrix(f"src,dst,bytes,class\n0,1,1e6,{bad}\n", False, 4)
