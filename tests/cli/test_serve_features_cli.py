"""``fabricsim serve`` serving features: --scheduler, --router, --shared-prefix, --speculative/--acceptance
(JSON keys; bad input => one line, exit 2)."""

import json

import pytest

from fabricsim.cli.app import main

BASE = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "2", "--requests", "60",
        "--input-len", "uniform:100,1000", "--output-len", "64", "--arrival-rate", "5", "--seed", "3"]


def serve_json(capsys, *extra):
    assert main([*BASE, *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_feature_keys_and_defaults(capsys):
    plain = serve_json(capsys)
    assert plain["prefix_hit_rate"] == 0.0 and plain["tokens_per_step"] == 1.0
    assert plain["prefill_tokens_computed"] > 60 * 100
    named = serve_json(capsys, "--scheduler", "chunked", "--router", "least-work", "--shared-prefix", "0")
    assert named == plain


def test_features_change_the_run(capsys):
    plain = serve_json(capsys)
    shared = serve_json(capsys, "--shared-prefix", "0.5")
    assert 0.9 < shared["prefix_hit_rate"] < 1.0
    assert shared["prefill_tokens_computed"] < 0.6 * plain["prefill_tokens_computed"]
    spec = serve_json(capsys, "--speculative", "3", "--acceptance", "0.6")
    assert spec["tokens_per_step"] == pytest.approx((1 - 0.6**4) / 0.4, rel=0.05)
    assert spec["tpot_s"]["p50"] < plain["tpot_s"]["p50"]
    static = serve_json(capsys, "--scheduler", "static", "--router", "round-robin")
    assert static["completed"] == 60 and static["ttft_s"]["p50"] > plain["ttft_s"]["p50"]
    assert serve_json(capsys, "--router", "random") == serve_json(capsys, "--router", "random")


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--shared-prefix", "1.5"], "shared-prefix"),
        (["--shared-prefix", "-0.1"], "shared-prefix"),
        (["--speculative", "0", "--acceptance", "0.5"], "speculative"),
        (["--speculative", "2", "--acceptance", "1"], "acceptance"),
        (["--speculative", "2", "--acceptance", "-0.2"], "acceptance"),
        (["--speculative", "2"], "acceptance"),
        (["--acceptance", "0.5"], "speculative"),
        (["--speculative", "100000", "--acceptance", "0.5"], "FABRICSIM_MAX_DRAFT_TOKENS"),
        (["--router", "fastest"], "router"),
        (["--scheduler", "fifo"], "scheduler"),
    ],
)
def test_bad_feature_input_exit_2(capsys, extra, named):
    rc = main([*BASE, *extra])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "", captured
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ")
    assert named in captured.err and "Traceback" not in captured.err


def test_table_shows_the_features_only_when_used(capsys):
    assert main(BASE) == 0
    plain = capsys.readouterr().out
    assert "prefix cache" not in plain and "tokens per decode step" not in plain
    assert main([*BASE, "--shared-prefix", "0.5", "--speculative", "2", "--acceptance", "0.5"]) == 0
    table = capsys.readouterr().out
    assert "prefix cache" in table and "tokens per decode step" in table
