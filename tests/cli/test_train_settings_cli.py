"""Framework settings on ``train`` and ``plan train`` (issue 10, item 3): flags, defaults that
follow Megatron-Core and say so in --help, one-line errors, what the planner chooses."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fabricsim.cli.app import app, main

TRAIN = ["train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024"]
TRAIN += ["--global-batch", "1536", "--seq-len", "2048", "--tp", "8", "--pp", "8", "--zero", "1"]
PLAN = ["plan", "train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "64"]
PLAN += ["--global-batch", "128", "--seq-len", "2048", "--top", "2", "--tp", "8"]
FLAGS = ("flash-attention", "overlap-grad-reduce", "overlap-param-gather", "tp-comm-overlap", "a2a-overlap")
DEFAULTS = {
    "flash_attention": True,
    "overlap_grad_reduce": False,
    "overlap_param_gather": False,
    "tp_comm_overlap": False,
    "a2a_overlap": False,
    "fp8_recipe": "delayed",
    "capacity_factor": None,
    "moe_dispatcher": "alltoall",
    "cross_entropy": "unfused",
    "mtp_layers": 0,
    "account_for_embedding_in_pipeline_split": False,
    "account_for_loss_in_pipeline_split": False,
    "grad_reduce_in_fp32": True,
    "pipeline_layout": None,
    "recompute_modules": None,
    "lora_rank": 0,  # every weight trains (LoRA: --lora-rank R)
}


def _json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_defaults_follow_megatron_core_and_are_reported(capsys) -> None:
    assert _json(capsys, TRAIN)["options"] == DEFAULTS


@pytest.mark.parametrize("flag", FLAGS)
def test_each_switch_has_both_forms(capsys, flag: str) -> None:
    key = flag.replace("-", "_")
    assert _json(capsys, [*TRAIN, f"--{flag}"])["options"][key] is True
    assert _json(capsys, [*TRAIN, f"--no-{flag}"])["options"][key] is False


def test_switches_change_the_step_the_way_they_should(capsys) -> None:
    base = _json(capsys, TRAIN)
    overlapped = _json(capsys, [*TRAIN, "--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap"])
    assert overlapped["step_time_s"] < base["step_time_s"]
    assert overlapped["time_breakdown_s"]["tp_comm_s"] < base["time_breakdown_s"]["tp_comm_s"]
    unfused = _json(capsys, [*TRAIN, "--no-flash-attention"])
    assert unfused["memory_breakdown_bytes"]["activations"] > base["memory_breakdown_bytes"]["activations"]


def test_cross_entropy_kernels_cost_what_they_move(capsys) -> None:
    """Megatron-Core's unfused loss moves 52 B per logit (fp32 copies), the fused native one 40 and
    Transformer Engine's 6: the step gets shorter in that order and only the compute changes."""
    steps = {impl: _json(capsys, [*TRAIN, "--cross-entropy", impl]) for impl in ("unfused", "native", "te")}
    assert steps["unfused"]["step_time_s"] > steps["native"]["step_time_s"] > steps["te"]["step_time_s"]
    for impl, payload in steps.items():
        assert payload["options"]["cross_entropy"] == impl
        assert payload["time_breakdown_s"]["dp_comm_s"] == steps["te"]["time_breakdown_s"]["dp_comm_s"]


def test_pipeline_split_accounting_runs_nvidias_405b_layout(capsys) -> None:
    """Llama 3.1 405B on 256 GB200 at pp 16 x vpp 8 = 128 chunks > 126 layers: refused unless the
    embedding and the loss count as layers (Megatron-Core's --account-for-*-in-pipeline-split)."""
    argv = ["train", "--model", "llama3-405b", "--system", "gb200-nvl72", "--gpus", "256", "--global-batch", "1536"]
    argv += ["--seq-len", "8192", "--tp", "4", "--pp", "16", "--vpp", "8", "--dtype", "fp8", "--fp8-recipe", "mxfp8"]
    assert main(argv) == 2
    assert "pp" in capsys.readouterr().err
    split = ["--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"]
    payload = _json(capsys, [*argv, *split])
    assert payload["options"]["account_for_embedding_in_pipeline_split"] is True and payload["step_time_s"] > 0


def test_moe_settings_on_train(capsys) -> None:
    argv = ["train", "--model", "deepseek-v3", "--system", "dgx-h100", "--gpus", "512", "--tp", "2", "--pp", "8"]
    argv += ["--dp", "32", "--ep", "64", "--global-batch", "4096", "--seq-len", "4096", "--recompute", "fine-grained"]
    argv += ["--expert-tp", "1", "--vpp", "4", "--a2a-overlap"]
    payload = _json(capsys, [*argv, "--dtype", "fp8", "--fp8-recipe", "block"])
    assert payload["layout"]["expert_tp"] == 1 and payload["fits"]
    assert payload["options"]["fp8_recipe"] == "block" and payload["options"]["a2a_overlap"] is True


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--fp8-recipe", "hybrid"], "fp8-recipe"),
        (["--capacity-factor", "0.2"], "capacity-factor"),
        (["--moe-dispatcher", "nccl"], "moe-dispatcher"),
        (["--cross-entropy", "fused"], "cross-entropy"),
        (["--mtp-layers", "-1"], "mtp-layers"),
        (["--expert-tp", "2"], "expert-tp"),
        (["--recompute", "partial"], "recompute"),
    ],
)
def test_bad_settings_are_one_line_errors(capsys, extra: list[str], field: str) -> None:
    assert main([*TRAIN, *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and field in err


def test_help_says_the_defaults_follow_megatron_core() -> None:
    for argv in (["train", "--help"], ["plan", "train", "--help"]):
        out = " ".join(CliRunner().invoke(app, argv, env={"COLUMNS": "200"}).output.split())
        for flag in (*FLAGS, "fp8-recipe", "expert-tp"):
            assert f"--{flag}" in out
        assert out.count("Megatron-Core") >= 5


def test_plan_chooses_free_overlaps_and_keeps_fixed_ones(capsys) -> None:
    free = _json(capsys, PLAN)["plans"][0]["options"]
    assert free["overlap_grad_reduce"] and free["overlap_param_gather"] and free["tp_comm_overlap"]
    fixed = _json(capsys, [*PLAN, "--no-overlap-grad-reduce", "--no-tp-comm-overlap", "--no-flash-attention"])
    plan = fixed["plans"][0]["options"]
    assert plan["overlap_grad_reduce"] is False and plan["tp_comm_overlap"] is False
    assert plan["flash_attention"] is False and plan["overlap_param_gather"] is True


def test_plan_searches_expert_tp(capsys) -> None:
    argv = ["plan", "train", "--model", "deepseek-v3", "--system", "dgx-h100", "--gpus", "512", "--tp", "2"]
    argv += ["--pp", "8", "--ep", "64", "--global-batch", "4096", "--seq-len", "4096", "--top", "1"]
    payload = _json(capsys, argv)
    assert payload["plans"] and payload["plans"][0]["layout"]["expert_tp"] == 1
    assert main([*argv, "--expert-tp", "2"]) == 2  # 2 x 64 exceeds tp x dp = 64: no valid layout
    assert "layout" in capsys.readouterr().err


def test_plan_api_takes_the_settings_as_keywords() -> None:
    from fabricsim import api
    from fabricsim.errors import FabricsimError

    plan = api.plan_train("gpt3-175b", "dgx-a100", 64, 128, 2048, top=1, tp_comm_overlap=False, fp8_recipe="block")
    assert dict(plan.plans[0].result.options)["tp_comm_overlap"] is False
    assert dict(plan.plans[0].result.options)["overlap_grad_reduce"] is True  # free: chosen on
    with pytest.raises(FabricsimError, match="a2a-overlap"):
        api.plan_train("gpt3-175b", "dgx-a100", 64, 128, 2048, a2a_overlap="maybe")  # type: ignore[arg-type]


def test_plan_reports_the_a2a_overlap_only_where_megatron_can_run_it(capsys) -> None:
    """The planner picks the A2A overlap freely, but a pipelined layout without interleaving has no
    combined 1F1B schedule in Megatron-Core: such plans run and report it off."""
    argv = ["plan", "train", "--model", "deepseek-v3", "--system", "dgx-h100", "--gpus", "512", "--tp", "2"]
    argv += ["--pp", "8", "--vpp", "1", "--ep", "64", "--global-batch", "4096", "--seq-len", "4096", "--top", "1"]
    plan = _json(capsys, argv)["plans"][0]
    assert plan["layout"]["vpp"] == 1 and plan["options"]["a2a_overlap"] is False


def test_train_and_plan_train_take_every_framework_setting() -> None:
    """Both pass their settings to ``training_options`` by name (``api.training.SETTINGS``): a
    setting missing from either signature would silently run at its default."""
    import inspect

    from fabricsim import api
    from fabricsim.api.training import SETTINGS

    for function in (api.train, api.plan_train):
        assert set(SETTINGS) <= set(inspect.signature(function).parameters), function.__name__
