"""A job's command line -> the keywords of the API function it calls (cluster/command.py)."""

from __future__ import annotations

import pytest

from fabricsim.api.cluster import COMMANDS
from fabricsim.cluster.command import FORMS, command_options, parse_command
from fabricsim.errors import FabricsimError

GPT3 = "train --model gpt3-175b --system dgx-h100 --gpus 512 --tp 8 --pp 8 --global-batch 512 --seq-len 2048"
LLAMA = "infer --model llama3-70b --system dgx-h100 --gpus 8 --tp 8 --input-len 1024 --output-len 128"


def parse(text: str):
    return parse_command(text, COMMANDS, "jobs[0].command")


def refusal(text: str) -> str:
    with pytest.raises(FabricsimError) as caught:
        parse(text)
    message = str(caught.value)
    assert message.startswith("jobs[0].command: ") and "\n" not in message
    return message


def test_train_options_become_typed_api_keywords():
    kind, kwargs = parse(GPT3 + " --no-sequence-parallel --capacity-factor 1.5 --recompute full --overlap-grad-reduce")
    assert kind == "train"
    assert kwargs == {
        "model": "gpt3-175b", "system": "dgx-h100", "gpus": 512, "tp": 8, "pp": 8, "global_batch": 512,
        "seq_len": 2048, "sequence_parallel": False, "capacity_factor": 1.5, "recompute": "full",
        "overlap_grad_reduce": True,
    }


def test_infer_keeps_text_where_the_api_takes_text_and_accepts_equals_and_a_fabricsim_prefix():
    kind, kwargs = parse("fabricsim " + LLAMA.replace("--output-len 128", "--output-len=128") + " --batch max")
    assert kind == "infer"
    assert kwargs["batch"] == "max" and kwargs["output_len"] == 128 and kwargs["input_len"] == 1024
    assert parse(LLAMA + " --batch 16")[1]["batch"] == "16"  # int | str: the API reads "16" itself


def test_traffic_is_a_tenant_with_its_pattern_size_hosts_and_seed():
    assert parse("traffic all-to-all --size 64MiB --hosts 16 --seed 3") == (
        "traffic", {"size": "64MiB", "hosts": 16, "seed": 3, "pattern": "all-to-all"})


def test_the_options_are_the_api_signature():
    """No second list of options: every keyword of api.train is a --option of a train job."""
    import inspect

    options = command_options(COMMANDS["train"], FORMS["train"])
    assert {name for name, _ in options.values()} == set(inspect.signature(COMMANDS["train"]).parameters)
    assert options["global-batch"][0] == "global_batch"
    assert set(command_options(COMMANDS["traffic"], FORMS["traffic"])) == {"size", "hosts", "seed"}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (GPT3.replace("--global-batch 512", "--global-batch abc"), "--global-batch: must be an integer, got 'abc'"),
        (GPT3 + " --tp 0", "--tp"),
        (GPT3.replace(" --seq-len 2048", ""), "train needs --seq-len"),
        (GPT3 + " --tpp 3", "did you mean"),
        (GPT3 + " --tp 4", "--tp is given twice"),
        (GPT3 + " --sequence-parallel=yes", "--sequence-parallel takes no value"),
        (GPT3 + " --micro-batch", "--micro-batch needs a value"),
        (GPT3 + " --recompute bogus", "--recompute: unknown recompute 'bogus'"),
        (GPT3 + " stray", "unexpected word 'stray'"),
        (LLAMA + " --batch maxx", "--batch: must be an integer or max"),
        ("traffic permutation --size 1MiB", "traffic needs --hosts"),
        ("traffic --hosts 4", "traffic needs PATTERN"),
        ("traffic bogus --hosts 4", "unknown pattern 'bogus'"),
        ("traffic permutation --hosts 4 --size 0", "--size: must be at least 1 byte"),
        ("traffic permutation --hosts 1", "--hosts: a pattern needs at least 2 hosts"),
        ("traffic permutation --hosts 4 --fail-links 2", "traffic has no option --fail-links"),
        ("trian --model x", "unknown job command 'trian'"),
        ("collective all-reduce --gpus 8", "a job is train, infer or traffic"),
        ("serve --model llama3-70b --system dgx-h100 --gpus 8", "issue 24"),
        ("train 'unbalanced", "cannot split the command line"),
        ("", "is empty"),
        ("fabricsim", "is empty"),
    ],
)
def test_bad_commands_are_one_line_naming_the_field(text, words):
    assert words in refusal(text)


@pytest.mark.parametrize(
    ("option", "words"),
    [
        ("--json", "give --json to fabricsim cluster"),
        ("--html x.html", "give --html to fabricsim cluster"),
        ("--fidelity flow", "the spec's fidelity"),
        ("--trace t.json", "no per-job trace"),
        ("--topology fat-tree:k=4", "the spec's fabric"),
        ("--placement spread", "placement: key"),
        ("--background permutation:0.5", "the spec's background"),
        ("--transport uet", "the spec's transport"),
        ("--ber 1e-9", "the spec's ber"),
        ("--seeds 4", "no variability"),
        ("--seed 4", "no variability"),
        ("--jitter 0.1", "no variability"),
        ("--offload optimizer", "analytic fidelity alone"),
    ],
)
def test_run_options_of_a_lone_command_are_refused_with_what_to_do(option, words):
    message = refusal(f"{GPT3} {option}")
    assert f"--{option.split()[0][2:]} is not an option of a cluster job" in message and words in message


def test_traffic_routing_and_topology_belong_to_the_spec():
    assert "the spec's routing" in refusal("traffic permutation --hosts 4 --routing spray")
    assert "the spec's fabric" in refusal("traffic permutation --hosts 4 --topology fat-tree:k=4")
