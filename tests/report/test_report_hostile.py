"""``fabricsim report`` on hostile result files (issue 27): one ``error:`` line naming the file and
the key, ``--out`` checked before anything is read or drawn, and a cap on the page it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.io.results import MAX_JSON_DEPTH, parse_result
from fabricsim.report.html import render_report
from fabricsim.report.html.page import number_text

COLLECTIVE = {"op": "all-reduce", "time_s": 1.0, "algbw_GBps": 4.0, "busbw_GBps": 5.0}


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, out: str | None = None) -> tuple[int, str]:
    source = tmp_path / "r.json"
    source.write_text(text)
    rc = main(["report", str(source), "--out", out or str(tmp_path / "r.html")])
    captured = capsys.readouterr()
    if rc == 2:
        assert captured.out == "" and captured.err.startswith("error: ") and captured.err.count("\n") == 1
    return rc, captured.err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000 + "]" * 100_000, "nests too deeply"),  # RecursionError before
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), f"deeper than {MAX_JSON_DEPTH}"),
        ('{"a": ' + "9" * 5000 + "}", "number too long"),  # ValueError (int digits) before
        ("{", "not JSON"),
        ("[1, 2]", "not hold a JSON object"),
    ],
)
def test_unreadable_json_is_one_line_naming_the_file(tmp_path, capsys, text, expected):
    rc, err = _report(tmp_path, capsys, text)
    assert rc == 2 and expected in err and "r.json" in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("result", "key"),
    [
        ({"time_s": 1, "op": "all-reduce", "busbw_GBps": 5}, "algbw_GBps is missing"),  # KeyError before
        ({**COLLECTIVE, "algbw_GBps": "fast"}, "algbw_GBps is not a number"),
        ({**COLLECTIVE, "algbw_GBps": 10**400}, "algbw_GBps is out of range"),
        ({"step_time_s": 1, "time_breakdown_s": [1, 2]}, "time_breakdown_s is not an object"),
        ({"step_time_s": 1, "time_breakdown_s": {"x": "1"}}, "time_breakdown_s.x is not a number"),
        ({"plans": [{"layout": 3}]}, "plans.0.layout is not an object"),
        ({"plans": "none"}, "plans is not a list"),
        ({"suites": [{"entries": [{"measured": 1}]}]}, "suites.0.entries.0.predicted is missing"),
        ({"residuals": [{"op": 3}], "runs": []}, "residuals.0.op"),
        ({"throughput_fraction": {"mean": True}}, "throughput_fraction.mean is not a number (got a bool)"),
        ({"ttft_s": {"p50": []}}, "ttft_s.p50 is not a number"),
        ({"traceEvents": {"ph": "X"}}, "traceEvents is not a list"),
    ],
)
def test_malformed_result_names_the_file_and_the_key(tmp_path, capsys, result, key):
    rc, err = _report(tmp_path, capsys, json.dumps(result))
    assert rc == 2, err
    assert "r.json" in err and key in err


def test_bad_out_is_refused_before_the_result_is_read_or_drawn(tmp_path, capsys):
    # a malformed result and a bad --out: the --out error comes first (it was a traceback)
    rc, err = _report(tmp_path, capsys, '{"busbw_GBps": 5}', out=str(tmp_path / "missing" / "r.html"))
    assert rc == 2 and err.startswith("error: out:") and "does not exist" in err


def test_trace_events_that_cannot_be_drawn_are_counted_not_fatal(tmp_path, capsys):
    events = [
        {"ph": "X", "ts": "abc", "dur": None, "name": 5},  # ValueError before
        {"ph": "X", "ts": 1.0, "dur": 2.0, "name": 5, "pid": [1], "tid": {"a": 1}},  # unhashable pid / tid
        {"ph": "M", "name": "thread_name", "args": "not an object"},
        "not an event",
    ]
    rc, err = _report(tmp_path, capsys, json.dumps({"traceEvents": events}))
    assert rc == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "1 events on 1 tracks; not drawn: 1 complete event without a numeric ts and dur" in html


def test_serve_runs_with_a_malformed_p99_name_the_file(tmp_path, capsys):
    good = {"ttft_s": {"p50": 1.0}, "e2e_s": {"p99": 2.0}, "output_tokens_per_s": 10.0}
    (tmp_path / "a.json").write_text(json.dumps(good))
    (tmp_path / "b.json").write_text(json.dumps({**good, "e2e_s": {"p99": "slow"}}))
    rc = main(["report", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert rc == 2 and "b.json: e2e_s.p99 is not a number" in err


def test_report_size_is_capped(tmp_path, capsys, monkeypatch):
    result = {"step_time_s": 1.0, "time_breakdown_s": {f"part{k}_s": 1.0 + k for k in range(50)}}
    source = tmp_path / "r.json"
    source.write_text(json.dumps(result))
    out = tmp_path / "r.html"
    assert main(["report", str(source), "--out", str(out)]) == 0
    size = out.stat().st_size
    out.unlink()
    capsys.readouterr()
    monkeypatch.setenv("FABRICSIM_MAX_REPORT_BYTES", str(size - 1))
    assert main(["report", str(source), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"cap {size - 1} bytes" in err and "FABRICSIM_MAX_REPORT_BYTES" in err
    assert not out.exists()
    monkeypatch.setenv("FABRICSIM_MAX_REPORT_BYTES", str(size))
    assert main(["report", str(source), "--out", str(out)]) == 0


def test_report_inputs_share_the_input_bytes_cap(tmp_path, capsys, monkeypatch):
    source = tmp_path / "r.json"
    source.write_text(json.dumps(COLLECTIVE))
    size = source.stat().st_size
    monkeypatch.setenv("FABRICSIM_MAX_INPUT_BYTES", str(2 * size))
    assert main(["report", str(source), str(source), "--out", str(tmp_path / "r.html")]) == 0
    assert main(["report", str(source), str(source), str(source), "--out", str(tmp_path / "r.html")]) == 2
    assert "FABRICSIM_MAX_INPUT_BYTES" in capsys.readouterr().err


def test_html_option_names_html_when_its_report_is_too_large(monkeypatch):
    monkeypatch.setenv("FABRICSIM_MAX_REPORT_BYTES", "10")
    with pytest.raises(FabricsimError) as info:
        render_report([COLLECTIVE], ["c"], field="html")
    assert info.value.field == "html"


def test_extreme_numbers_are_drawn_or_left_out_never_a_traceback():
    # finite but beyond what an axis can span, subnormal, and a huge integer shown in a table
    plans = [{"tokens_per_s": v, "memory_per_gpu_bytes": v, "step_time_s": 10**400} for v in (1e308, 5e-324, -1e308)]
    html = render_report([{"plans": plans}], ["p"])
    assert "~2^1328" in html  # 10**400 printed in short form instead of an OverflowError
    suite = {"name": "s", "entries": [{"measured": m, "predicted": 1.0, "unit": "s"} for m in (5e-324, 1e-310, 1.0)]}
    assert "<svg" in render_report([{"suites": [suite]}], ["v"])


def test_number_text_of_a_huge_integer():
    assert number_text(10**400) == "~2^1328"


def test_parse_result_accepts_what_fabricsim_writes():
    assert parse_result(json.dumps(COLLECTIVE), "c.json") == COLLECTIVE
