"""``api.plan_goodput`` and ``plan train --objective goodput``: layouts ranked by goodput."""

from __future__ import annotations

import json

import pytest

from fabricsim import api
from fabricsim.cli.app import main
from fabricsim.errors import FabricsimError

ARGS = ("llama3-8b", "dgx-h100", 64, 256, 4096)
LIMITS = {"tp": [1, 2, 4], "pp": [1, 2], "vpp": 1, "micro_batch": 1, "dtype": "bf16", "cp": 1}


def test_plans_are_ranked_by_goodput_and_say_so():
    result = api.plan_goodput(*ARGS, days=30, top=4, constraints=LIMITS, checkpoint_target="pfs").to_json()
    assert result["objective"] == "goodput"
    plans = result["plans"]
    goodputs = [p["goodput_tokens_per_s"] for p in plans]
    assert len(plans) == 4 and goodputs == sorted(goodputs, reverse=True)
    for plan in plans:
        assert plan["goodput_tokens_per_s"] == pytest.approx(plan["tokens_per_s"] * plan["ettr_expected"])
        assert 0 < plan["ettr_expected"] < 1
    assert plans[0]["why"] == [] and "below plan 1" in plans[1]["why"][0]


def test_goodput_stays_below_the_step_models_tokens_per_s_with_a_slow_file_system():
    """A 1 GB/s file system makes checkpoints expensive; every plan loses some of its tokens/s."""
    result = api.plan_goodput(*ARGS, days=30, top=3, constraints=LIMITS, pfs_bandwidth_Bps=1e9).to_json()
    assert all(p["goodput_tokens_per_s"] < p["tokens_per_s"] for p in result["plans"])


def test_bad_options_are_user_errors():
    with pytest.raises(FabricsimError, match=r"^days"):
        api.plan_goodput(*ARGS, days=0, constraints=LIMITS)
    with pytest.raises(FabricsimError, match=r"^top"):
        api.plan_goodput(*ARGS, days=1, top=0, constraints=LIMITS)


def test_cli_objective_goodput(capsys):
    argv = ["plan", "train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "64", "--global-batch", "256"]
    argv += ["--seq-len", "4096", "--tp", "1,2", "--pp", "1", "--objective", "goodput", "--days", "10", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["objective"] == "goodput" and "goodput_tokens_per_s" in out["plans"][0]
