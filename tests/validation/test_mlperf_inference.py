"""`fabricsim validate mlperf-inference` (issue 25, item 4): MLPerf Inference results of every catalog system
that has them (NVIDIA's rows of the serving suite plus AMD's), one row schema and one code path with
`validate serving`, per-vendor and leave-one-vendor-out errors in the output.

The full suite takes ~2 minutes of CPU; these tests run the data files, the vendor arithmetic and the CLI on
two Offline rows of different vendors."""

import json

import pytest

from fabricsim.cli.app import main
from fabricsim.validation import SUITES, serving
from fabricsim.validation import mlperf_inference as suite
from fabricsim.validation.base import ValidationEntry, load_entries

OWN = load_entries(suite.DATA_FILE)


def test_the_suite_is_registered_and_is_the_serving_rows_plus_its_own() -> None:
    assert SUITES["mlperf-inference"] == "mlperf_inference:run"
    rows = suite.rows()
    ids = [row["id"] for row in rows]
    assert len(ids) == len(set(ids)) == len(load_entries(serving.DATA_FILE)) + len(OWN)
    assert {row["vendor"] for row in rows} >= {"NVIDIA", "AMD"}
    assert {row["benchmark"] for row in rows} == set(serving.benchmarks())


def test_every_own_row_has_its_source_submission_layout_and_a_catalog_system() -> None:
    from fabricsim import catalog

    for row in OWN:
        assert "mlperf_log_summary.txt" in row["source"] and "layout from closed/" in row["source"], row["id"]
        assert str(row["value"]) in row["source"] or f"{row['value']:.2f}" in row["source"], row["id"]
        assert "MLPerf Inference v" in row["source"] and row["vendor"] == "AMD"
        assert row["benchmark"] in serving.benchmarks() and row["layout"]["policy"] == "orca"  # vLLM, no chunking
        assert catalog.load_system(row["catalog_system"]).device.name.startswith("mi3")


def _entry(measured: float, predicted: float) -> ValidationEntry:
    return ValidationEntry(id="x", metric="m", unit="u", measured=measured, predicted=predicted, source="s")


def test_vendor_and_leave_one_vendor_out_errors() -> None:
    entries = (_entry(100, 110), _entry(100, 80), _entry(100, 150))  # +10%, -20%, +50%
    errors = {(h.kind, h.group): (h.mean_abs_error, h.rows) for h in
              suite.vendor_errors(["A", "A", "B"], entries)}
    assert errors[("vendor", "A")] == (pytest.approx(0.15), 2)
    assert errors[("vendor", "B")] == (pytest.approx(0.5), 1)
    assert errors[("leave-one-vendor-out", "A")] == (pytest.approx(0.5), 1)
    assert errors[("leave-one-vendor-out", "B")] == (pytest.approx(0.15), 2)
    assert [h.kind for h in suite.vendor_errors(["A"], entries[:1])] == ["vendor"]  # no other vendor: no LOVO


def test_validate_mlperf_inference_json_reports_per_vendor_errors(monkeypatch, capsys) -> None:
    picks = [row for row in suite.rows() if row["scenario"] == "Offline" and row["benchmark"] == "llama2-70b"]
    two = [next(r for r in picks if r["vendor"] == "NVIDIA"), next(r for r in picks if r["vendor"] == "AMD")]
    monkeypatch.setattr(suite, "rows", lambda: two)
    assert main(["validate", "mlperf-inference", "--json"]) == 0
    (only,) = json.loads(capsys.readouterr().out)["suites"]
    assert only["name"] == "mlperf-inference" and len(only["entries"]) == 2
    holdout = {(h["kind"], h["group"]): h for h in only["holdout"]}
    kinds = ("vendor", "leave-one-vendor-out")
    assert set(holdout) == {(kind, vendor) for kind in kinds for vendor in ("AMD", "NVIDIA")}
    nvidia, amd = (abs(e["error"]) for e in only["entries"])
    assert holdout[("vendor", "NVIDIA")]["mean_abs_error"] == pytest.approx(nvidia)
    assert holdout[("leave-one-vendor-out", "NVIDIA")]["mean_abs_error"] == pytest.approx(amd)
    skipped = {item["id"]: item["reason"] for item in only["skipped"]}
    assert set(skipped) == {entry_id for entry_id, _ in suite.not_added()}
    assert "Stable Diffusion XL only" in skipped["google-tpu (v4.1, v5.0, v5.1)"]


def test_catalog_accelerators_without_rows_are_listed_with_where_it_was_checked() -> None:
    """Issue 25 item 4 asks for every catalog system that has MLPerf Inference results: Google's TPU results of
    v4.1-v5.1 are SDXL only and no round has a Gaudi 3 result, so both are listed (not_added), with the results
    folders read, instead of rows."""
    reasons = dict(suite.not_added())
    google, intel = reasons["google-tpu (v4.1, v5.0, v5.1)"], reasons["intel-gaudi (v4.0-v5.1)"]
    assert "tpu_v6_x4_flax" in google and "trillium_x4_flax" in google and "no diffusion model" in google
    assert "HLS-Gaudi2-PT" in intel and "gaudi3-8" in intel
    assert all(reason.strip() for reason in reasons.values()) and len(reasons) == len(suite.not_added())


@pytest.fixture(scope="module")
def whole_suite():
    from fabricsim import catalog
    from fabricsim.validation import run_suite

    return run_suite("mlperf-inference", catalog)


def _vendor_error(result, kind: str, vendor: str) -> float:
    return next(h.mean_abs_error for h in result.holdout if (h.kind, h.group) == (kind, vendor))


def test_done_when_other_vendors_within_20_percent(whole_suite) -> None:
    """Issue 25: mean |error| <= 20% over the non-NVIDIA rows (AMD: 14.1% over 10 rows on the AMD GEMM figures
    of kernel-efficiency.md V1-V7; 66.2% on the generation defaults), and leave-one-vendor-out is reported."""
    assert _vendor_error(whole_suite, "vendor", "AMD") <= 0.20
    assert _vendor_error(whole_suite, "leave-one-vendor-out", "NVIDIA") == _vendor_error(whole_suite, "vendor", "AMD")


def test_done_when_nvidia_within_15_percent(whole_suite) -> None:
    """Issue 25: mean |error| <= 15% over the NVIDIA rows (6.6% over 14 rows: Hopper -4..+10%, B200/GB200
    NVFP4 -12..+3% on the cuBLASLt NVFP4 figure, GB300 +13/+33% on the B300 figures)."""
    assert _vendor_error(whole_suite, "vendor", "NVIDIA") <= 0.15
