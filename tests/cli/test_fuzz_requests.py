"""Fuzz ``serve --request-trace`` with random and hostile request files, CSV and JSON Lines (issue 27).

Rows are drawn from a pool of hostile cells: integers past Python's 4,300-digit int-str limit,
NaN and infinities, negative and zero lengths, arrivals past the serving horizon, empty cells,
garbage text, missing and unknown columns, rows longer or shorter than the header, a UTF-8 byte-order
mark, invalid UTF-8 and NUL bytes. Every case goes through the in-process CLI with the checks of
:func:`tests.cli.test_fuzz_cli._check` (the same lowered caps): exit 0 or 2, one ``error:`` line and
nothing on stdout on 2, no traceback, nothing written outside the output folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.cli.test_fuzz_cli import EXAMPLES, FUZZ, _check, arena, fuzz_env  # noqa: F401 (fixtures)

SERVE = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8", "--seed", "1"]
HUGE = "9" * 5000  # past sys.get_int_max_str_digits() (4,300)
CELLS = ["0", "1", "5", "100", "0.5", "1.5", "-1", "-0", "nan", "NaN", "inf", "-inf", "1e30", "1e400", "4.6e9",
         "1e300", HUGE, "-" + HUGE, "", " ", "abc", "0x10", "1_000", "٣", "true", "null", "[1]", "{}", '"5"']
COLUMNS = ["arrival_s", "input_len", "output_len", "arrival_time", "timestamp", "prompt_len", "completion_len",
           "extra", ""]
BYTES = [b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\x00", b"\r\n", b'"', b",,,", b"\xc3\x28"]
CASES = max(20, EXAMPLES // 6)

hostile = st.sampled_from(CELLS) | st.text(max_size=8)
good = {"arrival": st.integers(0, 60).map(str) | st.floats(0, 60).map(repr), "length": st.integers(1, 300).map(str)}
KIND = {"arrival_s": "arrival", "arrival_time": "arrival", "timestamp": "arrival", "input_len": "length",
        "output_len": "length", "prompt_len": "length", "completion_len": "length"}
RIGHT = ["arrival_s", "input_len", "output_len"]
header = st.sampled_from([RIGHT] * 3 + [["prompt_len", "timestamp", "completion_len"]]) | st.lists(
    st.sampled_from(COLUMNS), max_size=4)
# hypothesis favours the first entry of sampled_from: the usual case comes first, the hostile ones after
stray = st.sampled_from([b""] * len(BYTES) + BYTES)  # most files start and end cleanly
MOSTLY = st.sampled_from([True] * 7 + [False])
ROWS = st.sampled_from([3, 1, 2, 5, 8, 0])


def _cell(draw: st.DrawFn, column: str) -> str:
    """Mostly a valid value for the column, sometimes a hostile one (1 in 8)."""
    if column in KIND and draw(MOSTLY):
        return draw(good[KIND[column]])
    return draw(hostile)


@st.composite
def csv_file(draw: st.DrawFn) -> bytes:
    """A header (often the right one), rows (sometimes too short or too long) and stray bytes."""
    names = draw(header)
    rows = []
    for _ in range(draw(ROWS)):
        row = [_cell(draw, name) for name in names]
        rows.append(row if draw(MOSTLY) else row[: draw(st.integers(0, len(row)))])
        if not draw(MOSTLY):
            rows[-1].append(draw(hostile))
    text = "\n".join([",".join(names), *(",".join(row) for row in rows)]) + "\n"
    return draw(stray) + text.encode("utf-8", "surrogatepass") + draw(stray)


def _json_value(text: str) -> object:
    try:
        return json.loads(text)  # numbers, NaN, null, lists... as JSON would carry them
    except ValueError:
        return text


@st.composite
def jsonl_file(draw: st.DrawFn) -> bytes:
    """Records with random keys and values (or not records at all), one per line, plus stray bytes."""
    lines = []
    for _ in range(draw(ROWS)):
        if draw(MOSTLY):
            record = {key: _json_value(_cell(draw, key)) for key in draw(header)}
            lines.append(json.dumps(record).replace('"' + HUGE + '"', HUGE))  # a bare 5,000-digit number
        else:
            lines.append(draw(hostile))
    body = "\n".join(lines).encode("utf-8", "surrogatepass")
    return draw(stray) + body + draw(stray)


@pytest.mark.parametrize(("suffix", "files"), [(".csv", csv_file()), (".jsonl", jsonl_file())])
def test_fuzz_request_files(suffix: str, files: st.SearchStrategy[bytes], fuzz_env: Path,  # noqa: F811
                            capsys: pytest.CaptureFixture[str]) -> None:
    trace = fuzz_env / f"requests{suffix}"

    @settings(FUZZ, max_examples=CASES)
    @given(files)
    def case(data: bytes) -> None:
        trace.write_bytes(data)
        _check([*SERVE, "--request-trace", str(trace)], fuzz_env, capsys)

    case()
