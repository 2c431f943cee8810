"""``fabricsim plan train --topology ocs-torus:auto``: the OCS slice per plan, JSON and table, and
one-line errors (exit 2)."""

import json

import pytest

from fabricsim.cli.app import main

BASE = ["plan", "train", "--model", "llama3-70b", "--system", "tpu-v5p", "--global-batch", "256", "--seq-len", "4096"]


def test_each_plan_gets_a_slice_with_its_runner_up_and_the_default(capsys) -> None:
    rc = main([*BASE, "--gpus", "256", "--tp", "16", "--top", "2", "--topology", "ocs-torus:auto", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert rc == 0 and payload["slice_search"]["default_dims"] == "4x8x8" and payload["slice_search"]["candidates"] == 9
    for plan in payload["plans"]:
        pick = plan["slice"]
        assert pick["topology"] == f"ocs-torus:{pick['dims']}" + (",twisted=1" if pick["twisted"] else "")
        assert pick["collective_s"] <= pick["runner_up"]["collective_s"]
        assert pick["collective_s"] <= pick["default"]["collective_s"] and pick["default"]["dims"] == "4x8x8"
        assert {"tp-all-gather", "tp-reduce-scatter"} <= set(pick["by_collective_s"])


def test_the_table_shows_the_slices(capsys) -> None:
    rc = main([*BASE, "--gpus", "128", "--tp", "4", "--top", "1", "--topology", "ocs-torus:auto"])
    out = capsys.readouterr().out
    assert rc == 0 and "OCS slice per plan" in out and "runner-up" in out


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--gpus", "128", "--topology", "ocs-torus:auto,twisted=1"], "topology"),
        (["--gpus", "96", "--topology", "ocs-torus:auto"], "gpus"),
        (["--gpus", "128", "--topology", "ocs-torus:auto", "--system", "dgx-h100"], "topology"),
    ],
)
def test_bad_slice_input_is_one_line_exit_2(capsys, extra: list[str], field: str) -> None:
    rc = main([*BASE, *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and field in err and "Traceback" not in err
