"""``--transport`` and ``--ber`` on the commands with the fabric in the loop (issue 26, item 7):
``train``/``infer``/``serve`` at ``--fidelity packet`` run on the chosen transport and report its
loss-recovery counters; below packet fidelity the options are refused in one line; ``traffic`` and
``collective`` name the transport family and show resent bytes."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.app import main

# 16 GPUs = 2 DGX nodes; tp 8 x pp 2 keeps the fabric's traffic to the pipeline hand-offs (fast)
TRAIN = ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "16", "--tp", "8", "--pp", "2",
         "--global-batch", "16", "--seq-len", "1024"]  # fmt: skip
INFER = ["infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "16", "--tp", "8", "--pp", "2",
         "--input-len", "128", "--output-len", "4", "--batch", "4"]  # fmt: skip
SERVE = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "16", "--tp", "8", "--seed", "1",
         "--arrival-rate", "5", "--requests", "10", "--input-len", "64", "--output-len", "4",
         "--disaggregate", "1:1"]  # fmt: skip
PACKET_KEYS = ("retransmitted_bytes", "trimmed_packets", "fec_latency_s")


def _json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_train_at_packet_fidelity_runs_on_uet_and_names_it(capsys):
    out = _json(capsys, [*TRAIN, "--fidelity", "packet", "--transport", "uet"])
    network = out["network"]
    assert (network["transport"], network["routing"]) == ("uet", "spray")
    assert network["packet_runs"] > 0
    assert all(key in network for key in PACKET_KEYS)
    assert network["retransmitted_bytes"] == 0  # no bit errors, no loss on this small job
    default = _json(capsys, [*TRAIN, "--fidelity", "packet"])["network"]
    assert default["transport"] == "infiniband"  # the DGX's NIC, as before


def test_a_bit_error_rate_resends_bytes_and_never_speeds_the_step(capsys):
    clean = _json(capsys, [*TRAIN, "--fidelity", "packet", "--transport", "uet"])
    noisy = _json(capsys, [*TRAIN, "--fidelity", "packet", "--transport", "uet", "--ber", "1e-6"])
    assert clean["network"]["retransmitted_bytes"] == 0 < noisy["network"]["retransmitted_bytes"]
    assert noisy["step_time_s"] >= clean["step_time_s"]


def test_infer_and_serve_take_the_transport_at_packet_fidelity(capsys):
    infer = _json(capsys, [*INFER, "--fidelity", "packet", "--transport", "uet"])
    assert infer["network"]["transport"] == "uet" and all(key in infer["network"] for key in PACKET_KEYS)
    serve = _json(capsys, [*SERVE, "--fidelity", "packet", "--transport", "roce"])
    assert serve["network"]["transport"] == "roce" and all(key in serve["network"] for key in PACKET_KEYS)


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        ([*TRAIN, "--fidelity", "flow", "--transport", "uet"], "transport"),
        ([*TRAIN, "--transport", "uet"], "transport"),  # analytic
        ([*TRAIN, "--fidelity", "simulate", "--ber", "1e-9"], "ber"),
        ([*TRAIN, "--fidelity", "packet", "--transport", "tcp"], "transport"),
        ([*TRAIN, "--fidelity", "packet", "--ber", "0.5"], "ber"),
        ([*TRAIN, "--fidelity", "packet", "--ber", "nan"], "ber"),
        ([*INFER, "--fidelity", "flow", "--ber", "1e-9"], "ber"),
        ([*INFER, "--fidelity", "packet", "--transport", "ethernet"], "transport"),
        ([*SERVE, "--fidelity", "flow", "--transport", "ib"], "transport"),
        ([*SERVE, "--fidelity", "packet", "--ber", "abc"], "ber"),
    ],
)
def test_transport_options_are_refused_in_one_line(capsys, argv, field):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in captured.err
    assert captured.out == ""


def test_traffic_and_collective_name_the_transport_and_show_resent_bytes(capsys):
    traffic = ["traffic", "permutation", "--topology", "fat-tree:k=4,gbps=400", "--fidelity", "packet", "--size",
               "1MB", "--seed", "1"]  # fmt: skip
    assert _json(capsys, [*traffic, "--transport", "uet"])["transport"] == "uet"
    assert _json(capsys, traffic)["transport"] == "custom"  # traffic's default: no CC on PFC, no family's
    assert main([*traffic, "--transport", "uet", "--ber", "1e-6"]) == 0
    assert "resent" in capsys.readouterr().out
    collective = ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1MB", "--topology",
                  "fat-tree:k=4,gbps=400", "--fidelity", "packet", "--transport", "roce"]  # fmt: skip
    out = _json(capsys, [*collective, "--ber", "1e-6"])
    assert out["transport"] == "roce" and out["retransmitted_bytes"] > 0
    assert all(key in out for key in PACKET_KEYS)
