"""``fabricsim cluster SPEC.yaml``: bad specs exit 2 with one line naming the key (no traceback,
nothing written), --help, and the table / JSON / HTML of a result (the engine run is faked here)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from fabricsim import api
from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError
from fabricsim.metrics import ClusterJobResult, ClusterResult, TierLoad

FABRIC = "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4"
TRAIN = "train --model llama3-8b --system dgx-h100 --gpus 8 --tp 8 --global-batch 8 --seq-len 1024"
CLUSTER_API = importlib.import_module("fabricsim.api.cluster")


def accept_placements(text: str) -> str:
    """Stands in for fabricsim.topology.placement.parse_placement (another branch of issue 23)."""
    if text not in ("packed", "spread"):
        raise FabricsimError("placement", f"{text!r} is not packed, spread, random:SEED or a file", "fix it")
    return text


@pytest.fixture(autouse=True)
def _placements(monkeypatch):
    monkeypatch.setattr(CLUSTER_API, "_parse_placement", accept_placements)


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return str(path)


def jobs(*lines: str) -> str:
    return f"fabric: {FABRIC}\njobs:\n" + "".join(lines)


def job(name: str, command: str = TRAIN, placement: str | None = None) -> str:
    text = f"  - name: {name}\n    command: {command}\n"
    return text + (f"    placement: {placement}\n" if placement else "")


BAD_SPECS = {
    "malformed YAML": ("fabric: [unclosed\njobs:\n", "spec: malformed YAML"),
    "not a mapping": ("- a\n- b\n", "spec: does not hold a YAML mapping"),
    "missing fabric": ("jobs:\n" + job("a"), "fabric: required key is missing"),
    "empty jobs": (f"fabric: {FABRIC}\njobs: []\n", "jobs: is empty"),
    "duplicate name": (jobs(job("a"), job("a")), "jobs[1].name: 'a' is already the name of jobs[0]"),
    "unknown command": (jobs(job("a"), job("b", "trian --gpus 8")), "jobs[1].command: unknown job command 'trian'"),
    "bad option": (jobs(job("a", TRAIN + " --tpp 2")), "jobs[0].command: train has no option --tpp"),
    "bad value": (jobs(job("a", TRAIN.replace("--gpus 8", "--gpus 0"))), "jobs[0].command: --gpus"),
    "serve": (jobs(job("a", "serve --model llama3-8b --system dgx-h100 --gpus 8")), "issue 24"),
    "run option": (jobs(job("a", TRAIN + " --fidelity flow")), "jobs[0].command: --fidelity"),
    "bad placement": (jobs(job("a"), job("b", placement="sideways")), "jobs[1].placement: "),
    "bad routing": (f"routing: hash\n{jobs(job('a'))}", "routing: unknown routing 'hash'"),
    "unknown key": (f"colour: red\n{jobs(job('a'))}", "colour: unknown key"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_a_bad_spec_exits_2_with_one_line_and_writes_nothing(case, tmp_path, capsys):
    text, words = BAD_SPECS[case]
    spec = write(tmp_path, text)
    html = tmp_path / "page.html"
    assert main(["cluster", spec, "--json", "--html", str(html)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ")
    assert words in captured.err
    assert not html.exists()


@pytest.mark.parametrize(("target", "words"), [("missing.yaml", "spec: cannot read"), (".", "spec: ")])
def test_an_unreadable_spec_path_exits_2(target, words, tmp_path, capsys):
    assert main(["cluster", str(tmp_path / target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {words}") and err.count("\n") == 1


def test_help_lists_the_spec_format(capsys):
    assert main(["cluster", "--help"]) == 0
    out = capsys.readouterr().out
    assert "spec" in out and "placement" in out and "--json" in out


def test_cluster_is_listed_by_the_root_help(capsys):
    assert main(["--help"]) == 0
    assert "cluster" in capsys.readouterr().out


RESULT = ClusterResult(
    FABRIC, "ecmp", "flow", None,
    (ClusterJobResult("pretrain", "train", 8, "spread", 2.0, 2.5), ClusterJobResult("noise", "traffic", 4, "packed",
                                                                                    0.5, 0.5)),
    (TierLoad("leaf", 0.25, 0.5, 1e9), TierLoad("spine", 0.75, 1.0, 2e9)),
)


def test_json_table_and_html_of_a_result(tmp_path, monkeypatch, capsys):
    """The CLI prints what api.cluster returns (faked: the engine run is wired at merge time)."""
    asked = []
    monkeypatch.setattr(api, "cluster", lambda path: asked.append(path) or RESULT)
    spec = write(tmp_path, jobs(job("pretrain")))
    html = tmp_path / "page.html"
    assert main(["cluster", spec, "--json", "--html", str(html)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert asked == [spec] and out["jobs"][0]["slowdown"] == 1.25 and out["jobs"][1]["slowdown"] == 1.0
    assert out["links"] == {"leaf": {"mean_utilization": 0.25, "max_utilization": 0.5, "bytes": 1e9},
                            "spine": {"mean_utilization": 0.75, "max_utilization": 1.0, "bytes": 2e9}}
    page = html.read_text()
    assert "<h2>cluster: " in page and 'data-key="0.jobs.0.slowdown"' in page and "link utilization per tier" in page
    assert main(["cluster", spec]) == 0
    table = capsys.readouterr().out
    for words in ("pretrain", "decode step (TPOT)", "1.250x", "500.000 ms", "spine", "75.0%", "2.500 s"):
        assert words in table


def test_a_malformed_cluster_result_names_the_key_in_the_report(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"fabric": FABRIC, "jobs": [{"name": "a", "alone_s": 1.0}], "links": {}}))
    assert main(["report", str(bad), "--out", str(tmp_path / "r.html")]) == 2
    assert "jobs.0.shared_s" in capsys.readouterr().err
