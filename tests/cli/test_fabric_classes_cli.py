"""``--cc-param`` on the commands with the fabric in the loop (issue 26, items 3 and 7): ``train``,
``infer`` and ``serve`` at ``--fidelity packet`` take the packet parameters ``traffic`` takes, traffic
classes included (the job in class 0, ``--background`` in ``background_class``), and report
``by_class``; elsewhere, and with InfiniBand credits, several classes are refused in one line."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main

CLASSES = ["--cc-param", "classes=2", "--cc-param", "background_class=1"]
TRAIN = ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "16", "--tp", "8", "--pp", "2",
         "--global-batch", "16", "--seq-len", "1024", "--nic", "roce-400"]  # fmt: skip
SERVE = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "16", "--tp", "8", "--seed", "1",
         "--arrival-rate", "5", "--requests", "10", "--input-len", "64", "--output-len", "4",
         "--disaggregate", "1:1", "--nic", "roce-400"]  # fmt: skip
INFER = ["infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8", "--input-len", "8",
         "--output-len", "2", "--batch", "1"]  # fmt: skip


def _json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_serve_runs_its_kv_hand_offs_and_the_background_in_their_classes(capsys):
    out = _json(capsys, [*SERVE, "--fidelity", "packet", "--background", "permutation:1", *CLASSES])
    by_class = out["network"]["by_class"]
    assert by_class["0"]["flows"] > 0 and by_class["1"]["flows"] > 0


def test_one_class_given_explicitly_prints_what_no_cc_param_prints(capsys):
    argv = [*TRAIN, "--fidelity", "packet", "--background", "permutation:0.5"]
    plain = _json(capsys, argv)
    assert "by_class" not in plain["network"]
    assert _json(capsys, [*argv, "--cc-param", "classes=1"]) == plain


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([*TRAIN, "--fidelity", "flow", *CLASSES], ("cc-param", "--fidelity packet")),
        ([*TRAIN, *CLASSES], ("cc-param", "--fidelity packet")),  # analytic
        ([*TRAIN, "--fidelity", "packet", "--nic", "ib-ndr", *CLASSES], ("cc-param", "credits")),
        ([*TRAIN, "--fidelity", "packet", *CLASSES, "--cc-param", "class_weights=1"], ("cc-param", "class_weights")),
        ([*SERVE, "--fidelity", "packet", "--cc-param", "background_class=1"], ("cc-param", "background_class")),
        ([*INFER, "--fidelity", "packet", "--cc-param", "class_sched=fifo"], ("cc-param", "class_sched")),
    ],
)
def test_class_settings_the_run_cannot_take_are_refused_in_one_line(capsys, argv, words):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and all(word in lines[0] for word in words) and "Traceback" not in captured.err
    assert captured.out == ""
