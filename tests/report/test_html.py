"""The HTML report without a browser: escaping, determinism, kinds, ``--html`` parsing."""

import json

import pytest

from fabricsim.cli.app import main
from fabricsim.cli.html_option import split_html_option
from fabricsim.errors import FabricsimError
from fabricsim.report.html import render_report
from fabricsim.report.html.kinds import kind_of, pareto_front

EVIL = "</script><script>alert(1)</script><b>"


def test_values_are_escaped_and_json_cannot_close_its_script():
    result = {
        "op": EVIL,
        "gpus": 8,
        "size_bytes": 1,
        "algorithm": EVIL,
        "protocol": "x",
        "time_s": 1.0,
        "algbw_GBps": 1.0,
        "busbw_GBps": 2.0,
    }
    html = render_report([result], [EVIL])
    assert EVIL not in html
    assert "&lt;/script&gt;" in html
    embedded = html.split('id="fabricsim-results">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded) == [result]
    assert html.count("<script") == 2  # the embedded JSON and the page's own script


def test_same_results_give_byte_identical_reports():
    result = {"step_time_s": 1.5, "time_breakdown_s": {"a_s": 1.0, "b_s": 0.5}, "memory_breakdown_bytes": {"w": 1e9}}
    assert render_report([result], ["r"]) == render_report([dict(result)], ["r"])


@pytest.mark.parametrize(
    ("keys", "kind"),
    [
        ({"suites": []}, "validate"),
        ({"plans": []}, "plan"),
        ({"ttft_s": {"p50": 1}}, "serve"),
        ({"ttft_s": 1}, "infer"),
        ({"throughput_fraction": {}}, "traffic"),
        ({"step_time_s": 1}, "train"),
        ({"busbw_GBps": 1}, "collective"),
        ({"traceEvents": []}, "timeline"),
        ({"workload": "chakra", "step_time_s": 1}, "replay"),
        ({"residuals": [], "runs": []}, "calibration"),
        ({"x": 1}, "result"),
    ],
)
def test_kind_of(keys, kind):
    assert kind_of(keys) == kind


def test_pareto_front_keeps_non_dominated_layouts():
    points = [(10.0, 100.0), (20.0, 90.0), (20.0, 150.0), (30.0, 140.0), (40.0, 200.0)]
    assert pareto_front(points) == [(10.0, 100.0), (20.0, 150.0), (40.0, 200.0)]


def test_split_html_option():
    assert split_html_option(["train", "--html", "a.html", "--json"]) == (["train", "--json"], "a.html")
    assert split_html_option(["train", "--html=a.html"]) == (["train"], "a.html")
    assert split_html_option(["train", "--", "--html", "x"]) == (["train", "--", "--html", "x"], None)
    with pytest.raises(FabricsimError, match="needs a file path"):
        split_html_option(["train", "--html"])
    with pytest.raises(FabricsimError, match="twice"):
        split_html_option(["--html", "a", "--html", "b"])


def test_html_option_writes_a_report_next_to_the_table(tmp_path, capsys):
    out = tmp_path / "c.html"
    args = ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1GiB", "--html", str(out)]
    assert main(args) == 0
    assert "busbw" in capsys.readouterr().out
    assert out.read_text().startswith("<!DOCTYPE html>") and 'class="plot"' in out.read_text()


def test_report_refuses_bad_inputs(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["report", str(bad), "--out", str(tmp_path / "r.html")]) == 2
    assert "JSON object" in capsys.readouterr().err
    bad.write_text("{nope")
    assert main(["report", str(bad), "--out", str(tmp_path / "r.html")]) == 2
    assert "not JSON" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text('{"x": 1}')
    assert main(["report", str(good), "--out", str(tmp_path)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_every_kind_has_a_builder():
    from fabricsim.report.html.kinds import BUILDERS

    kinds = {
        "validate",
        "plan",
        "serve",
        "infer",
        "traffic",
        "train",
        "collective",
        "timeline",
        "calibration",
        "replay",
        "result",
    }
    assert kinds <= set(BUILDERS)


def test_validation_suite_names_are_escaped():
    result = {
        "suites": [
            {
                "name": EVIL,
                "mean_abs_error": 0.1,
                "entries": [{"measured": 1.0, "predicted": 1.1, "unit": EVIL, "id": EVIL}],
            }
        ]
    }
    html = render_report([result], ["v"])
    assert EVIL not in html and 'data-key="0.suites.0.mean_abs_error"' in html


@pytest.mark.parametrize(
    "command", [["report", "r.json", "--out", "a.html"], ["measure", "collective", "--ranks", "2"]]
)
def test_html_option_is_refused_where_no_result_is_printed(command, tmp_path, capsys, monkeypatch):
    """report and measure print no result payload: --html exits 2 naming the option, writes nothing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.json").write_text("{}")
    assert main([*command, "--html", "b.html"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "html" in err and "--out" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
