"""Done-when: the CLI's all-reduce busbw on dgx-h100 x8 is within 10% of nccl-tests, 16 MiB .. 16 GiB.

Reads the measurements as shipped in the package (fabricsim/validation/data)."""

import json

import pytest

from fabricsim import catalog
from fabricsim.cli.app import main
from fabricsim.validation import run_suite
from fabricsim.validation.collectives import measured_rows

TOLERANCE = 0.10
H100_ROWS = [
    row
    for row in measured_rows()
    if row["id"].startswith("nccl-dgxc-h100x8-allreduce-")
    and 16 * 2**20 <= row["workload"]["message_bytes"] <= 16 * 2**30
]


def test_sweep_is_complete():
    assert len(H100_ROWS) == 9


@pytest.mark.parametrize("row", H100_ROWS, ids=lambda row: str(row["workload"]["message_bytes"]))
def test_h100_all_reduce_busbw_within_10_percent(row, capsys):
    size = str(row["workload"]["message_bytes"])
    rc = main(["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", size, "--json"])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert result["busbw_GBps"] == pytest.approx(row["value"], rel=TOLERANCE)


def test_suite_reports_every_row():
    suite = run_suite("collectives", catalog)
    assert len(suite.entries) == len(measured_rows())
    by_id = {entry.id: entry for entry in suite.entries}
    for row in H100_ROWS:
        assert abs(by_id[row["id"]].error) < TOLERANCE
    sendrecv = [e for e in suite.entries if "sendrecv" in e.id]
    assert len(sendrecv) == 4
