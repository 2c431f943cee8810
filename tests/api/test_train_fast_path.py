"""The validated single-estimate path of ``api.train`` (issue 27: >= 200x Calculon in-process): each
spec pair is checked once per GPU cap, the settings are passed in SETTINGS order, the result and
its energy figures are built in one go; nothing a caller can change is shared between results."""

import dataclasses

import pytest

from fabricsim import api, catalog
from fabricsim.api import training
from fabricsim.api.cost import attach_train, train_power
from fabricsim.engine.training import analytic
from fabricsim.errors import FabricsimError
from fabricsim.limits import CAPS
from fabricsim.workload.training import TrainingOptions

ARGS = ("llama3-8b", "dgx-h100", 8, 16, 4096)
NON_DEFAULT = {  # one valid, non-default value per setting of train (a dense model, tp 2, selective)
    "flash_attention": False,
    "overlap_grad_reduce": True,
    "overlap_param_gather": True,
    "tp_comm_overlap": True,
    "a2a_overlap": False,
    "fp8_recipe": "current",
    "capacity_factor": 1.5,
    "moe_dispatcher": "deepep",
    "cross_entropy": "te",
    "mtp_layers": 1,
    "account_for_embedding_in_pipeline_split": True,
    "account_for_loss_in_pipeline_split": True,
    "grad_reduce_in_fp32": False,
    "pipeline_layout": "Et*32L",  # one pipeline stage: embedding, the 32 layers, loss
    "recompute_modules": "core_attn,mlp",
    "lora_rank": 8,
}


def test_every_setting_reaches_the_options_in_its_place() -> None:
    assert set(NON_DEFAULT) == set(training.SETTINGS)
    for name, value in NON_DEFAULT.items():
        got = dict(api.train(*ARGS, tp=2, recompute="selective", **{name: value}).options)
        want = training.training_options(**{name: value}).as_dict("bf16")
        assert got == want, name


def test_the_cluster_check_follows_the_gpu_cap(monkeypatch) -> None:
    api.train("megatron-1t", "dgx-a100", 3072, 3072, 2048, tp=8, pp=64)  # checked and kept at the default cap
    api.train("megatron-1t", "dgx-a100", 1, 1, 2048)  # does not fit, but the largest cluster the cap allows may run it
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", "1")  # a cluster of at most one GPU cannot hold them
    with pytest.raises(FabricsimError, match=r"^model: megatron-1t has .* parameters"):
        api.train("megatron-1t", "dgx-a100", 1, 1, 2048)
    monkeypatch.delenv("FABRICSIM_MAX_GPUS")
    api.train("megatron-1t", "dgx-a100", 3072, 3072, 2048, tp=8, pp=64)


def test_one_build_equals_the_result_with_energy_attached() -> None:
    model, system = catalog.load_model("llama3-8b"), catalog.load_system("dgx-h100")
    for given, options in (({"tensor_parallel": 2}, TrainingOptions()), ({"tensor_parallel": 8}, None)):
        layout = analytic.resolve_layout(8, model, **given)
        estimate = analytic.estimate_training(model, system, layout, 16, 4096, options)
        power = train_power(system, 8)
        assert power is not None
        built = training.train_result(model.name, system.name, estimate, options, power)
        attached = attach_train(training.train_result(model.name, system.name, estimate, options), system)
        assert built == attached
        assert built.to_json() == attached.to_json()
        bare = training.train_result(model.name, system.name, estimate, options)
        assert dataclasses.replace(built, energy=()) == bare


def test_results_share_nothing_a_caller_can_change() -> None:
    first = api.train(*ARGS, tp=2, recompute="selective", recompute_modules="core_attn,mlp").to_json()
    first["power_W"]["total"] = -1.0
    first["options"]["recompute_modules"].append("changed")
    second = api.train(*ARGS, tp=2, recompute="selective", recompute_modules="core_attn,mlp").to_json()
    assert second["power_W"]["total"] > 0
    assert second["options"]["recompute_modules"] == ["core_attn", "mlp"]


def test_a_refused_layout_names_its_field_before_the_settings() -> None:
    with pytest.raises(FabricsimError, match=r"^pp: "):  # the layout is checked first, as before
        api.train(*ARGS, tp=2, pp=3, moe_dispatcher="nope")
    with pytest.raises(FabricsimError, match=r"^moe-dispatcher: "):
        api.train(*ARGS, tp=2, moe_dispatcher="nope")


def test_the_breakdown_displays_equal_their_named_tuples() -> None:
    from fabricsim.engine.training.results import MemoryBreakdown, TimeBreakdown

    time = TimeBreakdown(*(float(i) for i in range(len(TimeBreakdown._fields))))
    memory = MemoryBreakdown(*(float(i) for i in range(len(MemoryBreakdown._fields))))
    for display, row in ((training._time_json, time), (training._memory_json, memory)):
        assert list(display(row).items()) == list(row._asdict().items())  # keys, order and values
        assert display(row) is not display(row)


def test_a_gpu_count_is_checked_on_every_call() -> None:
    api.train(*ARGS)  # the spec pair is held; 8 GPUs have a power figure
    for bad in (7, 12):
        with pytest.raises(FabricsimError, match=r"^gpus: "):
            api.train(ARGS[0], ARGS[1], bad, *ARGS[3:])
    api.train(ARGS[0], ARGS[1], 512, 512, 4096)
    with pytest.raises(FabricsimError, match=r"^gpus: 512 exceeds the 256 GPUs of gh200"):  # held per system
        api.train(ARGS[0], "gh200", 512, 512, 4096)


def test_the_default_settings_run_with_every_layout() -> None:
    # train skips check_settings_for_layout for them: neither of its refusals can apply
    model = catalog.load_model("mixtral-8x22b")
    default = training._options_of(training._UNSET)
    for given in ({"expert_parallel": 8, "pipeline_parallel": 2}, {"recompute": "full"}, {}):
        layout = analytic.resolve_layout(64, model, **given)
        training.check_settings_for_layout(default, layout)
        assert not training.a2a_overlap_unavailable(default, layout) and not default.recompute_modules


def test_a_held_spec_pair_follows_the_catalog_and_the_cap(monkeypatch) -> None:
    api.train(*ARGS)
    catalog.load_model.cache_clear()  # the catalog gives a new spec object for the name
    api.train(*ARGS)
    held = training._held()[ARGS[:2]]
    assert held.model is catalog.load_model(ARGS[0]) and held.gpu_cap == CAPS["GPUS"]
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", "4096")
    api.train(*ARGS)
    assert training._held()[ARGS[:2]].gpu_cap == 4096  # checked again at the cap now set
    path = str(catalog.data_root() / "models" / f"{ARGS[0]}.yaml")  # the same spec under another name
    assert api.train(path, *ARGS[1:]).to_json() == api.train(*ARGS).to_json()
