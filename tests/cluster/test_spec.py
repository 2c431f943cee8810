"""Cluster spec documents (cluster/spec.py): a valid spec, and every error as one line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_fakes import FABRIC, TRAFFIC, TRAIN, FakePolicy

from fabricsim.cluster.spec import load_spec, parse_spec
from fabricsim.errors import FabricsimError

INFER = "infer --model llama3-8b --system dgx-h100 --gpus 8 --tp 8 --batch 4 --input-len 128 --output-len 16"


def spec(*jobs: dict, **keys) -> dict:
    return {"fabric": FABRIC, **keys, "jobs": list(jobs)}


def job(name: str, command: str = TRAIN, **keys) -> dict:
    return {"name": name, "command": command, **keys}


def refusal(data, parsers, folder: Path = Path()) -> str:
    with pytest.raises(FabricsimError) as caught:
        parse_spec(data, parsers, folder)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_a_valid_spec_with_defaults(parsers):
    parsed = parse_spec(spec(job("pretrain", placement="spread"), job("chat", INFER), job("noise", TRAFFIC)), parsers)
    assert (parsed.fabric, parsed.routing, parsed.fidelity, parsed.background) == (FABRIC, "ecmp", "flow", None)
    assert [j.name for j in parsed.jobs] == ["pretrain", "chat", "noise"]
    assert [j.kind for j in parsed.jobs] == ["train", "infer", "traffic"]
    assert [j.placement for j in parsed.jobs] == ["spread", "packed", "packed"]
    assert parsed.jobs[0].policy == FakePolicy("spread")
    assert [j.gpus for j in parsed.jobs] == [16, 8, 4]
    assert parsed.jobs[0].kwargs["global_batch"] == 16 and parsed.system == "dgx-h100"


def test_routing_fidelity_background_and_a_relative_placement_file(parsers, tmp_path):
    (tmp_path / "ranks.txt").write_text("3 2 1 0\n")
    data = spec(job("noise", TRAFFIC, placement="ranks.txt"), routing="Spray", fidelity="packet",
                background="permutation:0.5")
    path = tmp_path / "cluster.yaml"
    import yaml

    path.write_text(yaml.safe_dump(data))
    parsed = load_spec(path, parsers)
    assert (parsed.routing, parsed.fidelity, parsed.background) == ("spray", "packet", "permutation:0.5")
    assert parsed.jobs[0].placement == "ranks.txt"  # as written; read from the spec's folder
    assert parsed.jobs[0].policy == FakePolicy("file", hosts=(3, 2, 1, 0))
    assert parsed.system is None


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"jobs": [job("a")]}, "fabric: required key is missing"),
        (spec(), "jobs: is empty"),
        ({"fabric": FABRIC}, "jobs: required key is missing"),
        (spec(job("a"), job("a")), "jobs[1].name: 'a' is already the name of jobs[0]"),
        (spec(job("a"), job("b", "trian --model x")), "jobs[1].command: unknown job command 'trian'"),
        (spec(job("a"), job("b", TRAIN + " --tpp 2")), "jobs[1].command: train has no option --tpp"),
        (spec(job("a", TRAIN.replace("--gpus 16", "--gpus x"))), "jobs[0].command: --gpus: must be an integer"),
        (spec(job("a"), job("b", placement="nowhere.txt")), "jobs[1].placement: "),
        (spec(job("a", placement="random:x")), "jobs[0].placement: bad seed"),
        (spec(job("a", placement="")), "jobs[0].placement: is empty"),
        (spec(job("a", nodes=3)), "jobs[0].nodes: unknown key"),
        (spec(job("a"), colour="red"), "colour: unknown key"),
        (spec({"command": TRAIN}), "jobs[0].name: required key is missing"),
        (spec(job(7)), "jobs[0].name: must be text"),
        (spec(job("")), "jobs[0].name: is empty"),
        (spec(job("a"), routing="hash"), "routing: unknown routing 'hash'"),
        (spec(job("a"), fidelity="analytic"), "fidelity: unknown fidelity 'analytic'"),
        (spec(job("a"), background=" "), "background: is empty"),
        ({"fabric": " ", "jobs": [job("a")]}, "fabric: is empty"),
        ({"fabric": FABRIC, "jobs": {"a": TRAIN}}, "jobs: must be a list of jobs"),
        (spec("train"), "jobs[0]: must be a mapping"),
        (["fabric"], "spec: does not hold a YAML mapping"),
        (spec(job("a"), job("b", TRAIN.replace("dgx-h100", "dgx-a100"))), "jobs[1].command: --system dgx-a100"),
    ],
)
def test_every_error_is_one_line_naming_the_key(parsers, data, words):
    assert words in refusal(data, parsers)


def test_malformed_yaml_and_unreadable_files_name_the_spec(parsers, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("fabric: [unclosed\njobs:\n")
    for path, words in [(bad, "spec: malformed YAML"), (tmp_path / "missing.yaml", "spec: cannot read"),
                        (tmp_path, "spec: ")]:
        with pytest.raises(FabricsimError, match="^" + words.replace("[", r"\[")):
            load_spec(path, parsers)


def test_the_shipped_example_is_a_valid_spec(parsers):
    example = Path(__file__).parents[2] / "examples" / "cluster-two-jobs.yaml"
    parsed = load_spec(example, parsers)
    assert [(job.name, job.kind, job.gpus, job.placement) for job in parsed.jobs] == [
        ("pretrain-a", "train", 448, "spread"), ("pretrain-b", "train", 448, "spread"),
        ("storage", "traffic", 64, "packed")]
    assert (parsed.routing, parsed.fidelity, parsed.system) == ("ecmp", "flow", "dgx-h100")


def test_transport_and_ber_at_packet_fidelity_and_refused_below_it(parsers):
    """issue 26 item 7: ``transport``/``ber`` keys set the packet network's transport; flow refuses them."""
    parsed = parse_spec(spec(job("noise", TRAFFIC), fidelity="packet", transport="uet", ber=1.0e-9), parsers)
    assert (parsed.transport, parsed.ber) == ("uet", "1e-09")
    assert parse_spec(spec(job("noise", TRAFFIC)), parsers).transport is None
    assert "transport: sets the packet network's transport" in refusal(spec(job("a"), transport="uet"), parsers)
    assert "ber: sets the packet network's transport" in refusal(spec(job("a"), ber="1e-9"), parsers)
