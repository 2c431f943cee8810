"""``--transport roce|ib|uet`` and ``--ber`` on ``traffic`` and ``collective`` at packet fidelity
(issue 26, items 1 and 4): the options a transport sets, the figures they move, one-line errors."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main

TOPO = "fat-tree:k=4,gbps=400"
TRAFFIC = ["traffic", "permutation", "--topology", TOPO, "--fidelity", "packet", "--size", "1MB", "--seed", "1"]


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_uet_sprays_without_loss_of_bytes_and_beats_roce_ecmp_on_a_permutation(capsys):
    uet = _json(capsys, [*TRAFFIC, "--transport", "uet", "--json"])
    roce = _json(capsys, [*TRAFFIC, "--transport", "roce", "--json"])
    assert (uet["cc"], uet["lossless"], uet["routing"]) == ("nscc", "none", "spray")
    assert (roce["cc"], roce["lossless"], roce["routing"]) == ("dcqcn", "pfc", "ecmp")
    assert uet["delivered_bytes"] == uet["offered_bytes"]
    assert uet["completion_time_s"] <= roce["completion_time_s"]


def test_ib_transport_is_credits_and_adaptive_routing(capsys):
    ib = _json(capsys, [*TRAFFIC, "--transport", "ib", "--json"])
    assert (ib["cc"], ib["lossless"], ib["routing"]) == ("none", "credit", "spray")


def test_a_bit_error_rate_costs_retransmissions(capsys):
    clean = _json(capsys, [*TRAFFIC, "--ber", "1e-12", "--json"])
    noisy = _json(capsys, [*TRAFFIC, "--ber", "1e-6", "--json"])
    assert clean["retransmitted_bytes"] == 0 < noisy["retransmitted_bytes"]
    assert noisy["fct_s"]["max"] > clean["fct_s"]["max"]
    assert noisy["delivered_bytes"] == noisy["offered_bytes"]


def test_collective_runs_on_the_uet_transport(capsys):
    argv = ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1MB", "--topology", TOPO,
            "--fidelity", "packet", "--transport", "uet", "--json"]  # fmt: skip
    out = _json(capsys, argv)
    assert out["cc"] == "nscc" and out["lossless"] == "none" and out["routing"] == "spray"
    assert out["time_s"] > 0


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        ([*TRAFFIC, "--transport", "tcp"], "transport"),
        ([*TRAFFIC, "--transport", "uet", "--cc", "dcqcn"], "transport"),
        ([*TRAFFIC, "--transport", "uet", "--spray"], "transport"),
        ([*TRAFFIC, "--ber", "abc"], "ber"),
        ([*TRAFFIC, "--ber", "0.5"], "ber"),
        ([*TRAFFIC, "--ber", "nan"], "ber"),
        ([*TRAFFIC, "--cc-param", "entropies=2.5"], "entropies"),
        (["traffic", "permutation", "--topology", TOPO, "--transport", "uet"], "--fidelity packet"),
        (["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1MB", "--ber", "1e-9"],
         "--fidelity"),
    ],
)  # fmt: skip
def test_bad_transport_options_are_one_line_errors(capsys, argv, field):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and field in err
