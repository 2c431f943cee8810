"""Done-when: each kind of report renders in headless Chromium (no console errors, every plot has
drawn marks, every number shown equals the JSON's), offline; a 1T plan's report included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricsim.cli.app import main

from .browser import launch, open_offline

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")

CAL_LOG = Path(__file__).parents[1] / "calibration" / "data" / "a3mega-16xh100-all_reduce.log"

COMMANDS = {
    "train": [
        "train",
        "--model",
        "llama3-70b",
        "--system",
        "dgx-h100",
        "--gpus",
        "64",
        "--global-batch",
        "256",
        "--seq-len",
        "4096",
        "--tp",
        "8",
        "--pp",
        "2",
    ],
    "simulate": [
        "train",
        "--model",
        "llama3-8b",
        "--system",
        "dgx-h100",
        "--gpus",
        "16",
        "--global-batch",
        "32",
        "--seq-len",
        "2048",
        "--tp",
        "8",
        "--fidelity",
        "simulate",
    ],
    "infer": [
        "infer",
        "--model",
        "llama3-70b",
        "--system",
        "dgx-h100",
        "--gpus",
        "8",
        "--batch",
        "8",
        "--input-len",
        "1024",
        "--output-len",
        "128",
    ],
    "serve": [
        "serve",
        "--model",
        "llama3-8b",
        "--system",
        "dgx-h100",
        "--gpus",
        "8",
        "--arrival-rate",
        "4",
        "--requests",
        "40",
        "--input-len",
        "512",
        "--output-len",
        "64",
        "--seed",
        "1",
    ],
    "plan-1t": [
        "plan",
        "train",
        "--model",
        "megatron-1t",
        "--system",
        "dgx-h100",
        "--gpus",
        "1024",
        "--global-batch",
        "1024",
        "--seq-len",
        "2048",
        "--top",
        "5",
    ],
    "traffic": ["traffic", "permutation", "--topology", "fat-tree:k=4", "--routing", "ecmp", "--seed", "1"],
    "validate": ["validate", "collectives"],
    "collective": ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "16", "--size", "1GiB"],
}


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as playwright:
        instance = launch(playwright)
        yield instance
        instance.close()


def _json(capsys, args) -> dict:
    capsys.readouterr()
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _at(results: list, key: str):
    value = results
    for part in key.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _check(page: dict, results: list) -> None:
    assert page["errors"] == []
    assert all(url.startswith("file:") for url in page["requests"]), page["requests"]
    assert page["plots"], "no plot in the report"
    assert int(page["plot_count"]) == len(page["plots"])  # the inline script ran
    for plot in page["plots"]:
        assert plot["marks"] > 0 and plot["drawn"] == plot["marks"], plot
    assert page["cells"]
    for cell in page["cells"]:
        expected = _at(results, cell["key"])
        if isinstance(expected, str):
            assert cell["text"] == expected == cell["value"]
            continue
        assert json.loads(cell["value"]) == expected, cell
        assert float(cell["text"]) == pytest.approx(expected, rel=1e-5), cell


def _report(tmp_path, capsys, name, files) -> Path:
    out = tmp_path / f"{name}.html"
    capsys.readouterr()
    assert main(["report", *map(str, files), "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("kind", sorted(COMMANDS))
def test_report_kind_renders_in_chromium(kind, browser, tmp_path, capsys):
    result = _json(capsys, COMMANDS[kind])
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(result))
    page = open_offline(browser, _report(tmp_path, capsys, kind, [path]))
    _check(page, [result])


def test_calibration_and_timeline_reports(browser, tmp_path, capsys):
    calibration = _json(
        capsys, ["calibrate", "nccl-tests", str(CAL_LOG), "--system", "dgx-h100", "--out", str(tmp_path / "cal.yaml")]
    )
    trace = tmp_path / "trace.json"
    _json(capsys, [*COMMANDS["simulate"], "--trace", str(trace)])
    (tmp_path / "cal.json").write_text(json.dumps(calibration))
    page = open_offline(browser, _report(tmp_path, capsys, "cal", [tmp_path / "cal.json", trace]))
    _check(page, [calibration, json.loads(trace.read_text())])
    assert any(p["title"] == "timeline" and p["marks"] > 10 for p in page["plots"])


def test_serve_rate_sweep_has_a_latency_throughput_curve(browser, tmp_path, capsys):
    files, results = [], []
    for rate in ("2", "8", "32"):
        args = [a if a != "4" else rate for a in COMMANDS["serve"]]
        results.append(_json(capsys, args))
        files.append(tmp_path / f"serve{rate}.json")
        files[-1].write_text(json.dumps(results[-1]))
    page = open_offline(browser, _report(tmp_path, capsys, "sweep", files))
    _check(page, results)
    curve = [p for p in page["plots"] if p["title"].startswith("latency-throughput")]
    assert curve and curve[0]["marks"] >= 4  # the line, three runs, the knee


def test_html_option_on_a_command_renders(browser, tmp_path, capsys):
    out = tmp_path / "direct.html"
    assert main([*COMMANDS["train"], "--html", str(out)]) == 0
    result = _json(capsys, COMMANDS["train"])
    _check(open_offline(browser, out), [result])


def test_replay_report_renders(browser, tmp_path, capsys):
    """A replayed Chakra trace (as ``replay --json`` prints it) and its Chrome trace."""
    from fabricsim.io.chakra import encode_chakra
    from fabricsim.workload.chakra import ChakraNode, ChakraRank, NodeType

    paths = []
    for rank in range(2):
        nodes = (
            ChakraNode(1, "fwd", NodeType.COMP, (), (), 100 + 50 * rank),
            ChakraNode(2, "ar", NodeType.COMM_COLL, (1,), (), 40, {"comm_type": 0, "comm_size": 1024}),
            ChakraNode(3, "bwd", NodeType.COMP, (2,), (), 200),
        )
        paths.append(tmp_path / f"t.{rank}.et")
        paths[-1].write_bytes(encode_chakra(ChakraRank(rank, nodes)))
    trace = tmp_path / "timeline.json"
    result = _json(capsys, ["replay", *map(str, paths), "--trace", str(trace)])
    (tmp_path / "replay.json").write_text(json.dumps(result))
    page = open_offline(browser, _report(tmp_path, capsys, "replay", [tmp_path / "replay.json", trace]))
    _check(page, [result, json.loads(trace.read_text())])
