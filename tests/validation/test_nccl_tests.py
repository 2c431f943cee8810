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


# A100 send/recv, >= 256 MiB: the model sends at NCCL's effective NVLink rate (topo.h 20 GB/s per
# NVLink3 x 12 = 240 GB/s); nccl-tests measured 188.6-195.1 GB/s, so it over-predicts by +23% to
# +26%. No documented NCCL mechanism found accounts for the gap quantitatively (p2p channels per
# peer are 2 x 12 NVLinks, rounded up to 32, i.e. not limiting; the maintainers only say send/recv
# "might not achieve peak bandwidth", nccl#464), so the model is not bent to it: this asserts it
# stays an upper bound no more than 30% high. The 128 MiB row (110.8 GB/s, +112%) is excluded: it
# is the sweep's first size and 43% below its neighbours, which no fixed per-call cost of this
# model explains (see the comment on that row in the shipped yaml).
SENDRECV_BOUND = 0.30


def test_a100_sendrecv_is_an_upper_bound_within_30_percent():
    suite = run_suite("collectives", catalog)
    rows = [e for e in suite.entries if "sendrecv" in e.id and int(e.id.rsplit("-", 1)[1]) >= 256 * 2**20]
    assert len(rows) == 3
    for entry in rows:
        assert 0.0 <= entry.error <= SENDRECV_BOUND, (entry.id, entry.error)
