"""Task ids, parameter schemas from runner signatures, and running one task."""

from __future__ import annotations

import hashlib
import json

import pytest
import sweep_fakes

from fabricsim import api
from fabricsim.errors import FabricsimError
from fabricsim.sweep import TaskKind, expand, parse_spec, run_task
from fabricsim.sweep.tasks import STATUS_FAILED, STATUS_OK, params_model, task_count, task_id

CASE = {"op": "all-reduce", "system": "dgx-h100", "gpus": 8, "size": "1GiB"}


def _one(case, runners):
    (task,) = expand(parse_spec({"tasks": [{"kind": "collective", "list": [case]}]}), runners)
    return task


def test_task_id_is_sha256_of_canonical_json_and_pinned():
    params = {**CASE, "algorithm": "auto"}
    text = (
        '{"kind":"collective","params":'
        '{"algorithm":"auto","gpus":8,"op":"all-reduce","size":"1GiB","system":"dgx-h100"}}'
    )
    assert task_id(TaskKind.COLLECTIVE, params) == hashlib.sha256(text.encode()).hexdigest()[:32]
    assert task_id(TaskKind.COLLECTIVE, params) == "408ac84853986c592f770bbac4fea88a"  # never changes silently


def test_defaults_are_filled_in_so_equal_scenarios_share_an_id():
    runners = api.sweep_runners()
    implicit = _one(CASE, runners)
    explicit = _one({**dict(reversed(CASE.items())), "algorithm": "auto"}, runners)
    assert implicit == explicit
    assert implicit.task_id == "408ac84853986c592f770bbac4fea88a"


def test_schema_comes_from_the_runner_signature():
    model = params_model(TaskKind.COLLECTIVE, sweep_fakes.fake_collective)
    assert list(model.model_fields) == ["op", "system", "gpus", "size", "algorithm"]
    assert model.model_config["extra"] == "forbid"

    def star_args(*sizes: int) -> None: ...

    with pytest.raises(TypeError):
        params_model(TaskKind.COLLECTIVE, star_args)


def test_run_task_ok_and_user_error_becomes_a_failed_outcome():
    ok = run_task(sweep_fakes.RUNNERS, _one(CASE, sweep_fakes.RUNNERS))
    assert ok.status == STATUS_OK and ok.error is None and '"gpus":8' in ok.result_json
    failed = run_task(sweep_fakes.RUNNERS, _one({**CASE, "gpus": 3}, sweep_fakes.RUNNERS))
    assert failed.status == STATUS_FAILED and failed.result_json is None
    assert failed.error == "gpus: 3 GPUs cannot form this group (use a power of two)"


def test_real_collective_task_matches_the_api_call():
    outcome = run_task(api.sweep_runners(), _one(CASE, api.sweep_runners()))
    assert outcome.status == STATUS_OK
    direct = api.collective("all-reduce", system="dgx-h100", gpus=8, size="1GiB")
    assert outcome.result_json == __import__("json").dumps(direct.to_json(), sort_keys=True, separators=(",", ":"))


def test_a_bad_catalog_name_inside_a_task_is_a_failed_row_not_a_crash():
    outcome = run_task(api.sweep_runners(), _one({**CASE, "system": "dgx-h1000"}, api.sweep_runners()))
    assert outcome.status == STATUS_FAILED
    assert "dgx-h1000" in outcome.error and "\n" not in outcome.error


def test_train_tasks_take_every_framework_setting():
    """Sweep specs reach every setting of ``train`` (the runner's signature is the schema)."""
    case = {"model": "deepseek-v3", "system": "dgx-h100", "gpus": 512, "global_batch": 4096, "seq_len": 4096}
    case |= {"tp": 2, "pp": 8, "vpp": 4, "dp": 32, "ep": 64, "expert_tp": 1, "recompute": "fine-grained"}
    case["a2a_overlap"] = True
    case |= {"overlap_grad_reduce": True, "overlap_param_gather": True, "tp_comm_overlap": True}
    case |= {"flash_attention": True, "fp8_recipe": "block", "dtype": "fp8", "moe_dispatcher": "deepep"}
    case |= {"cross_entropy": "te", "grad_reduce_in_fp32": False}
    runners = api.sweep_runners()
    (task,) = expand(parse_spec({"tasks": [{"kind": "train", "list": [case]}]}), runners)
    outcome = run_task(runners, task)
    assert outcome.status == "ok", outcome.error
    result = json.loads(outcome.result_json or "{}")
    assert result["options"]["moe_dispatcher"] == "deepep" and result["layout"]["expert_tp"] == 1
    assert result["options"]["cross_entropy"] == "te" and result["options"]["grad_reduce_in_fp32"] is False


def test_task_count_is_computed_not_enumerated_and_capped(monkeypatch):
    axis = list(range(200))
    huge = {"tasks": [{"kind": "collective", "grid": {"op": "all-reduce", "system": "dgx-h100", "gpus": axis,
                                                      "size": axis, "algorithm": axis[:200]}},
                      {"kind": "collective", "list": [CASE, CASE]}]}
    spec = parse_spec(huge)
    assert task_count(spec) == 200**3 + 2  # 8 x 10^6 + 2, the hang, counted in microseconds
    with pytest.raises(FabricsimError, match=r"spec tasks: 8000002 exceeds the cap 1000000 \(set FABRICSIM_MAX_SWEEP"):
        expand(spec, sweep_fakes.RUNNERS)
    monkeypatch.setenv("FABRICSIM_MAX_SWEEP_TASKS", "3")
    small = parse_spec({"tasks": [{"kind": "collective", "list": [CASE, CASE]}, {"kind": "collective",
                                                                                "grid": {**CASE, "gpus": [8, 16]}}]})
    assert task_count(small) == 4  # duplicates are counted: a bound known before expanding
    with pytest.raises(FabricsimError, match="exceeds the cap 3"):
        expand(small, sweep_fakes.RUNNERS)
    monkeypatch.setenv("FABRICSIM_MAX_SWEEP_TASKS", "4")
    assert len(expand(small, sweep_fakes.RUNNERS)) == 2
