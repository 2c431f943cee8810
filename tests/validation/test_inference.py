"""TensorRT-LLM H100 offline throughput, dense Llama rows: mean |error| <= 20%."""

from fabricsim import catalog
from fabricsim.validation import run_suite


def test_trtllm_dense_rows_within_twenty_percent():
    suite = run_suite("inference", catalog)
    assert len(suite.entries) == 30
    assert suite.mean_abs_error <= 0.20, [(e.id, round(e.error, 3)) for e in suite.entries]
    assert all(e.predicted > 0 for e in suite.entries)
