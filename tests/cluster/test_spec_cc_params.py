"""A cluster spec's ``cc_params`` (cluster/spec.py): the packet parameters every job's fabric shares,
as ``--cc-param`` gives them to one job; every problem is one line naming ``cc_params``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cluster_fakes import FABRIC, TRAFFIC, TRAIN

from fabricsim.cluster.command import parse_command
from fabricsim.cluster.spec import parse_spec
from fabricsim.errors import FabricsimError


def _spec(cc_params, **keys) -> dict:
    return {"fabric": FABRIC, "fidelity": "packet", "cc_params": cc_params, **keys,
            "jobs": [{"name": "noise", "command": TRAFFIC}]}  # fmt: skip


def test_a_mapping_or_a_list_of_texts_as_cc_param_takes_them(parsers):
    mapping = parse_spec(_spec({"classes": 2, "background_class": 1, "class_weights": "3,1"}), parsers)
    assert mapping.cc_params == ("classes=2", "background_class=1", "class_weights=3,1")
    assert parse_spec(_spec(["classes=2", "class_sched=wrr"]), parsers).cc_params == ("classes=2", "class_sched=wrr")
    assert parse_spec(_spec({"timer_s": 1.5e-3}), parsers).cc_params == ("timer_s=0.0015",)
    assert parse_spec({"fabric": FABRIC, "jobs": [{"name": "noise", "command": TRAFFIC}]}, parsers).cc_params is None


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"nope": 1}, "unknown parameter 'nope'"),
        ({"classes": 0}, "classes must be in"),
        ({"mtu_bytes": 1.5}, "mtu_bytes must be a whole number"),
        ({"trimming": True}, "must be a mapping NAME: VALUE"),
        ("classes=2", "must be a mapping NAME: VALUE"),
        (["classes"], "is not NAME=VALUE"),
        ([], "is empty"),
    ],
)
def test_a_bad_cc_params_is_one_line_naming_the_key(parsers, given, words):
    with pytest.raises(FabricsimError) as caught:
        parse_spec(_spec(given), parsers)
    assert caught.value.field == "cc_params" and words in caught.value.problem
    assert "\n" not in str(caught.value) and "e.g. --cc-param" not in caught.value.fix  # the YAML form


def test_cc_params_need_packet_fidelity(parsers):
    with pytest.raises(FabricsimError) as caught:
        parse_spec(_spec({"classes": 2}, fidelity="flow"), parsers)
    assert caught.value.field == "cc_params" and "fidelity: packet" in caught.value.fix


def test_a_job_giving_cc_param_is_sent_to_the_specs_key(parsers):
    with pytest.raises(FabricsimError) as caught:
        parse_command(f"{TRAIN} --cc-param classes=2", parsers.commands, "jobs[0].command")
    assert caught.value.field == "jobs[0].command" and "cc_params" in caught.value.fix


def test_the_example_spec_documents_a_cc_params_line_that_parses(parsers):
    example = Path(__file__).parents[2] / "examples" / "cluster-two-jobs.yaml"
    line = next(text for text in example.read_text().splitlines() if "cc_params:" in text)
    given = yaml.safe_load(line.lstrip("# ").split(" (")[0])["cc_params"]
    assert parse_spec(_spec(given), parsers).cc_params == ("classes=2", "background_class=1")
