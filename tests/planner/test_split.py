"""Prefill/decode split search: options, ranking, API/CLI section."""

import json

from fabricsim import api
from fabricsim.catalog import load_model, load_system
from fabricsim.cli.app import main
from fabricsim.engine.inference.step import InferenceLayout
from fabricsim.planner.split import MAX_SPLITS, SplitQuestion, search_splits, split_options
from fabricsim.workload.requests import LengthDist, poisson_stream


def test_split_options() -> None:
    assert split_options(1) == [None]
    assert split_options(4) == [None, (1, 3), (2, 2), (3, 1)]
    many = split_options(64)
    assert many[0] is None and len(many) <= MAX_SPLITS + 1
    assert all(p + d == 64 and p >= 1 and d >= 1 for p, d in many[1:])


def test_ranked_by_slo_attainment_then_throughput() -> None:
    model, system = load_model("llama3-8b"), load_system("dgx-h100")
    lengths = (LengthDist("fixed", 512.0), LengthDist("fixed", 128.0))
    stream = poisson_stream(40.0, 200, lengths, (8191, 8191), 0)
    layouts = [InferenceLayout(1, 1, 1, "bf16", "bf16", 4), InferenceLayout(2, 1, 1, "bf16", "bf16", 2)]
    plans, skipped = search_splits(SplitQuestion(model, system, stream, (2.0, 0.1)), layouts)
    assert skipped == 0
    assert len(plans) == 4 + 2  # (aggregated + 3 splits) + (aggregated + 1 split)
    keys = [(-p.summary.slo_attainment, -p.summary.output_tokens_per_s) for p in plans]
    assert keys == sorted(keys)


def test_api_and_cli_serving_section(capsys) -> None:
    result = api.plan_infer("llama3-8b", "dgx-h100", 8, 512, 128, top=2, serving={"arrival_rate": 20, "requests": 100})
    serving = result.to_json()["serving"]
    assert serving["requests"] == 100 and serving["simulated"] >= 2
    assert [d["rank"] for d in serving["deployments"]] == [1, 2]
    assert {"slo_attainment", "output_tokens_per_s", "ttft_s", "tpot_s", "layout"} <= set(serving["deployments"][0])
    argv = ["plan", "infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--input-len", "512"]
    rc = main([*argv, "--output-len", "128", "--top", "2", "--arrival-rate", "20", "--requests", "100"])
    assert rc == 0 and "P:D" in capsys.readouterr().out
    rc = main([*argv, "--output-len", "128", "--arrival-rate", "-1", "--json"])
    assert rc == 2 and "arrival-rate" in capsys.readouterr().err
    rc = main([*argv, "--output-len", "128", "--json"])
    assert rc == 0 and "serving" not in json.loads(capsys.readouterr().out)
