"""The published-run bounds of the training model (issue 3 'Done when')."""

from statistics import mean

from fabricsim.validation import run_suite


def test_training_suite_bounds() -> None:
    entries = run_suite("training").entries
    table1 = [e for e in entries if e.id.startswith("megatron-sc21-t1")]
    assert len(table1) == 10
    assert all(e.metric == "hardware_tflops_per_gpu" for e in table1)
    assert mean(abs(e.error) for e in table1) <= 0.05
    assert max(abs(e.error) for e in table1) <= 0.10
    korthikanti = [e for e in entries if e.id.startswith("korthikanti")]
    for metric in ("mfu", "iteration_time"):
        rows = [e for e in korthikanti if e.metric == metric]
        assert len(rows) == 4
        assert mean(abs(e.error) for e in rows) <= 0.05
    readme = [e for e in entries if e.id.startswith("megatron-readme")]
    assert {e.metric for e in readme} == {"hardware_tflops_per_gpu", "iteration_time"}
