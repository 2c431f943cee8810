"""Kernel-level validation suite: out-of-sample rows with sources, held-out groups, error guard."""

from fabricsim import catalog
from fabricsim.catalog import load_device
from fabricsim.validation import kernels as suite
from fabricsim.validation import run_suite
from fabricsim.validation.base import load_entries


def test_rows_are_sourced_and_not_calibration_inputs() -> None:
    """A validation row must not be a calibration input (issue 27: G33-4096, one end of the K sweep
    that TILE_OVERHEAD_S was fitted on, was a row): disjoint by id and by what they measure."""
    rows = load_entries(suite.DATA_FILE)
    assert all(str(row["source"]).strip() for row in rows)
    inputs = suite.calibration_inputs(catalog)
    row_ids, input_ids = [row["id"] for row in rows], [point["id"] for point in inputs]
    assert len(set(row_ids)) == len(row_ids) and len(set(input_ids)) == len(input_ids)
    assert not set(row_ids) & set(input_ids)
    measured = {key: point["id"] for point in inputs for key in suite.shape_keys(point)}
    for row in rows:
        assert not suite.shape_keys(row) & set(measured), row["id"]


def test_calibration_inputs_cover_the_constants_and_the_catalog() -> None:
    """The list the disjointness test checks is the real one: the fit points of every fitted
    kernel-model constant, and every catalog kernel figure of the suite's devices."""
    inputs = suite.calibration_inputs(catalog)
    fitted = " ".join(str(point.get("fits", "")) for point in inputs)
    for constant in ("TILE_OVERHEAD_S", "KERNEL_FIXED_S", "ATTENTION_SEQ_HALF", "ATTENTION_CAUSAL_SEQ_HALF",
                     "ATTENTION_HEAD_DIM_HALF"):
        assert constant in fitted
    assert {"G33-4096", "G33-k256"} <= {point["id"] for point in inputs if point.get("fits") == "TILE_OVERHEAD_S"}
    keys = {key for point in inputs for key in suite.shape_keys(point)}
    for name in suite.DEVICE_SYSTEMS:
        device = load_device(name)
        for fmt, bench in device.kernels.gemm.items():
            assert ("gemm", name, fmt, 1, bench.m, bench.n, bench.k) in keys


def test_kernel_model_is_accurate_out_of_sample() -> None:
    result = run_suite("kernels", catalog, holdout=True)
    assert len(result.entries) >= 40
    assert result.mean_abs_error <= 0.10
    assert {h.kind for h in result.holdout} == {"leave-one-device-out", "leave-one-dtype-out"}
    assert result.calibration.startswith("out-of-sample")
