"""Kernel-level validation suite: out-of-sample rows with sources, held-out groups, error guard."""

from fabricsim import catalog
from fabricsim.catalog import load_device
from fabricsim.validation import kernels as suite
from fabricsim.validation import run_suite
from fabricsim.validation.base import load_entries


def test_rows_are_sourced_and_not_calibration_points() -> None:
    rows = load_entries(suite.DATA_FILE)
    assert all(str(row["source"]).strip() for row in rows)
    calibration = {
        (name, fmt, bench.m, bench.n, bench.k)
        for name in ("a100-80gb", "h100-sxm", "h200", "h800", "b200", "gb200")
        for fmt, bench in load_device(name).kernels.gemm.items()
    }
    for row in rows:
        if row["kind"] == "gemm":
            assert (row["device"], row["format"], row["m"], row["n"], row["k"]) not in calibration, row["id"]
            assert not (row["device"] == "h100-sxm" and row["k"] == 256)  # the TILE_OVERHEAD_S point


def test_kernel_model_is_accurate_out_of_sample() -> None:
    result = run_suite("kernels", catalog, holdout=True)
    assert len(result.entries) >= 40
    assert result.mean_abs_error <= 0.10
    assert {h.kind for h in result.holdout} == {"leave-one-device-out", "leave-one-dtype-out"}
    assert result.calibration.startswith("out-of-sample")
