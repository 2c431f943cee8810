"""Megatron-Core r0.8.0 H100 weak-scaling suite (issue 10): provenance, held-out error, and the
Done-when's 1.7B model on 48 H100 (the suite's first row)."""

import math

import pytest

from fabricsim import catalog
from fabricsim.validation import run_suite
from fabricsim.validation import training_h100 as suite


@pytest.fixture(scope="module")
def result():
    return run_suite("training-h100", catalog, holdout=True)


def test_every_row_has_a_source_and_runs(result) -> None:
    rows = suite.rows()
    assert len(rows) == len(result.entries) == 9
    assert all("937571cfd49d0194c06123af93e310cd3637cf50" in str(row["source"]) for row in rows)
    assert [row["gpus"] for row in rows] == [48, 96, 192, 384, 768, 1536, 2304, 3072, 6144]
    assert all(row["tp"] * row["pp"] * row["dp"] == row["gpus"] for row in rows)
    assert all(math.isfinite(e.predicted) and e.predicted > 0 for e in result.entries)
    assert result.calibration.startswith("out-of-sample: no constant fitted on these rows")
    assert [h.kind for h in result.holdout] == ["leave-one-device-out"]


def test_model_sizes_are_the_tables() -> None:
    """The table's sizes are the untied GPT's parameter counts (12h² per layer, two h x V embeddings)."""
    for row in suite.rows():
        h, layers, vocab = row["hidden_size"], row["num_layers"], row["vocab"]
        params = layers * 12 * h**2 + 2 * vocab * h
        assert params / 1e9 == pytest.approx(float(row["model_size"].rstrip("B")), rel=0.06), row["id"]


def test_model_flops_are_megatrons() -> None:
    """Megatron's num_floating_point_operations (r0.8.0): 12·B·s·L·h²·(2 + s/h + 4 + V/(2Lh)) for an
    MHA GPT with a 4h GeLU MLP; fabricsim's model FLOPs must count the same (full attention)."""
    row = suite.rows()[0]
    estimate = suite.estimate_row(row, catalog.load_system("dgx-h100"))
    b, s, layers, h, vocab = row["gbs"], row["seq"], row["num_layers"], row["hidden_size"], row["vocab"]
    megatron = 12 * b * s * layers * h**2 * (2 + s / h + 4 + vocab / (2 * layers * h))
    assert estimate.model_flops == pytest.approx(megatron, rel=1e-9)


@pytest.mark.xfail(strict=True, reason="issue 10 Done-when (1.7B on 48 H100 <= 50% MFU) not met: 52.1% today "
                   "(measured 41.3%)")
def test_small_dense_model_mfu_on_h100() -> None:
    """The Done-when's 1.7B model is the published row (h 2048, 16 heads, 24 layers, vocabulary 131,072,
    TP1 DP48, GBS 192, seq 4096, overlapped DP communication) measured at 41.3% MFU."""
    row = suite.rows()[0]
    assert row["hidden_size"] == 2048 and row["gpus"] == 48 and row["gbs"] == 192
    assert suite.estimate_row(row, catalog.load_system("dgx-h100")).mfu <= 0.50
