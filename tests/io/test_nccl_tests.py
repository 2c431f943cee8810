"""nccl-tests / rccl-tests log parsing: the public 16xH100 log and the format's variants."""

from pathlib import Path

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.io.nccl_tests import parse_nccl_tests

PUBLIC_LOG = Path(__file__).parents[1] / "calibration" / "data" / "a3mega-16xh100-all_reduce.log"

HEADER = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20
#  Rank  0 Group  0 Pid   100 on node-a device  0 [0x01] AMD Instinct MI300X
#  Rank  1 Group  0 Pid   101 on node-a device  1 [0x02] AMD Instinct MI300X
"""


def test_public_log_parses():
    run = parse_nccl_tests(PUBLIC_LOG.read_text(), str(PUBLIC_LOG))
    assert (run.op, run.ranks, run.nodes) == ("all-reduce", 16, 2)
    assert run.devices == ("NVIDIA H100 80GB HBM3",)
    assert len(run.rows) == 31
    last = run.rows[-1]
    assert last.size_bytes == 8 * 2**30 and last.count == 2**31 and last.dtype == "float"
    assert last.time_s == pytest.approx(47535e-6) and last.busbw_Bps == pytest.approx(338.82e9)
    assert last.in_place_time_s == pytest.approx(47743e-6) and last.wrong == 0
    # busbw = S / t x 2(n-1)/n, the nccl-tests definition, within the log's rounding
    assert last.size_bytes / last.time_s * 2 * 15 / 16 == pytest.approx(last.busbw_Bps, rel=1e-3)
    assert run.avg_busbw_Bps == pytest.approx(70.742e9)


def test_rccl_rows_without_root_and_error_column():
    text = (
        HEADER
        + """#  all_gather_perf
     1048576    131072   float    20.5   51.15   25.58  0e+00    20.1   52.17   26.09  0e+00
     2097152    262144   float    30.0   69.91   34.95  0e+00    29.5   71.09   35.54  0e+00
"""
    )
    run = parse_nccl_tests(text, "rccl.log")
    assert run.op == "all-gather" and run.ranks == 2 and run.nodes == 1
    assert [r.size_bytes for r in run.rows] == [1048576, 2097152]
    assert run.rows[0].wrong is None and run.rows[1].time_s == pytest.approx(30e-6)


def test_mpi_prefixed_lines_and_explicit_op():
    text = "\n".join(
        "[1,0]<stdout>:" + line
        for line in (
            HEADER
            + """
     1048576    262144   float  sum  -1    20.5   51.15   51.15    N/A    20.1   52.17   52.17    N/A
"""
        ).splitlines()
    )
    run = parse_nccl_tests(text, "x.log", op="all-reduce")
    assert run.op == "all-reduce" and len(run.rows) == 1 and run.rows[0].wrong is None


def test_wrong_values_refuse_the_log():
    text = HEADER + "all_reduce_perf\n 1048576 262144 float sum -1 20.5 51.15 51.15 3 20.1 52.17 52.17 0\n"
    with pytest.raises(FabricsimError, match="wrong values"):
        parse_nccl_tests(text, "bad.log")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("all_reduce_perf\n 1048576 262144 float sum -1 20.5 51.15 51.15 0 20.1 52.17 52.17 0\n", "Rank"),
        (HEADER + "all_reduce_perf\n", "no result rows"),
        (HEADER + " 1048576 262144 float sum -1 20.5 51.15 51.15 0 20.1 52.17 52.17 0\n", "--op"),
        (HEADER + "all_reduce_perf\n 1048576 262144 float sum -1 nan 51.15 51.15 0 20.1 52.17 52.17 0\n", "time"),
    ],
)
def test_unusable_logs_are_one_line_errors(text, message):
    with pytest.raises(FabricsimError, match=message) as info:
        parse_nccl_tests(text, "x.log")
    assert info.value.field in ("log", "op")
