"""The published-run bounds of the training model (issue 3 'Done when')."""

from statistics import mean

from fabricsim import catalog
from fabricsim.validation import SuiteResult, run_suite


def test_training_suite_bounds() -> None:
    """Out-of-sample since issue 10 (A100 compute calibrated on a 2025 cuBLAS benchmark, G18): the
    model is optimistic on these 2021-22 runs by ~10-16%; the bounds guard that level (issue 10's
    'mean <= 5%' held only while GEMM_PEAK_FRACTION was fitted on these rows)."""
    entries = run_suite("training", catalog).entries
    table1 = [e for e in entries if e.id.startswith("megatron-sc21-t1")]
    assert len(table1) == 10
    assert all(e.metric == "hardware_tflops_per_gpu" for e in table1)
    assert mean(abs(e.error) for e in table1) <= 0.13
    assert max(abs(e.error) for e in table1) <= 0.22
    korthikanti = [e for e in entries if e.id.startswith("korthikanti")]
    for metric in ("mfu", "iteration_time"):
        rows = [e for e in korthikanti if e.metric == metric]
        assert len(rows) == 4
        assert mean(abs(e.error) for e in rows) <= 0.16
    readme = [e for e in entries if e.id.startswith("megatron-readme")]
    assert {e.metric for e in readme} == {"hardware_tflops_per_gpu", "iteration_time"}


# Korthikanti et al. 2022, Fig. 1 (GiB per GPU: parameters+optimizer, activations without and with
# sequence parallel + selective recomputation), as transcribed in calculon-ai/calculon
# calculon/llm/validation.py (seqsel_fig1 kProfile) @ 2dd9c5c8 -- a secondary transcription.
KORTHIKANTI_FIG1_GIB = {
    "22b": (45.5625, 59.25, 9.5625),
    "175b": (45.5625, 66.84375, 12.3515625),
    "530b": (31.640625, 114.0234375, 23.076171875),
    "1t": (32.958984375, 131.25, 26.5625),
}


def test_memory_matches_korthikanti_figure_1() -> None:
    from fabricsim.catalog import load_system
    from fabricsim.engine.training.analytic import training_memory
    from fabricsim.specs import ParallelLayout, Recompute
    from fabricsim.validation import training
    from fabricsim.validation.base import load_entries

    system = load_system("dgx-a100")
    rows = {
        r["id"].split("-")[1]: r["workload"]
        for r in load_entries(training.KORTHIKANTI_FILE)
        if "hidden_size" in r["workload"] and "tensor_parallel" in r["workload"]
    }
    for key, (states_gib, none_gib, seqsel_gib) in KORTHIKANTI_FIG1_GIB.items():
        workload = rows[key]
        model = training.gpt_model(key, workload)
        micro_batch, chunks = training.KORTHIKANTI_SCHEDULE[key]
        for recompute, sp, expected in ((Recompute.NONE, False, none_gib), (Recompute.SELECTIVE, True, seqsel_gib)):
            layout = ParallelLayout(
                tensor_parallel=8,
                pipeline_parallel=int(workload["pipeline_parallel"]),
                data_parallel=1,
                virtual_stages=chunks,
                micro_batch_size=micro_batch,
                recompute=recompute,
                sequence_parallel=sp,
                dtype="fp16",
            )
            memory = training_memory(
                model, system, layout, int(workload["global_batch_size"]), 2048, training.KORTHIKANTI_OPTIONS
            )
            states = (memory.weights + memory.gradients + memory.optimizer_states) / 2**30
            # the figure counts the transformer layers; our most loaded GPU also holds the embedding
            embedding_gib = 18 * 51200 * int(workload["hidden_size"]) / 8 / 2**30
            assert abs(states / (states_gib + embedding_gib) - 1) < 0.01, (key, states, states_gib)
            assert abs(memory.activations / 2**30 / expected - 1) < 0.10, (key, recompute, memory.activations)


def test_suite_says_what_it_was_calibrated_on(capsys) -> None:
    """No constant is fitted on these rows: the JSON and the table say so."""
    import json

    from fabricsim.cli.app import main

    assert main(["validate", "training", "--json"]) == 0
    suite = json.loads(capsys.readouterr().out)["suites"][0]
    assert suite["calibration"].startswith("out-of-sample: no constant fitted on these rows")
    assert main(["validate", "training"]) == 0
    assert "out-of-sample" in capsys.readouterr().out
    assert "calibration" not in SuiteResult("uncalibrated", ()).to_json()
