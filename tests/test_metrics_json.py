"""``contract_json`` builds a result's JSON in one step where the fields allow it (issue 27: to_json
was a tenth of an in-process train); it must equal the field-by-field build, keys in the same order."""

import copy
import dataclasses
import json
import pickle

import pytest

from fabricsim import api, metrics
from fabricsim.metrics import TrainResult


def _results() -> list:
    train = api.train("llama3-8b", "dgx-h100", 8, 16, 4096, tp=2)
    offloaded = api.train(
        "megatron-1t", "dgx-a100", 3072, 3072, 2048, tp=8, pp=16, dp=24, micro_batch=8, zero=1,
        recompute="selective", offload="optimizer,weights,activations", offload_tier="host",
    )
    listed = api.train("llama3-8b", "dgx-h100", 8, 16, 4096, tp=2, recompute="selective",
                       recompute_modules="core_attn,mlp")
    return [
        train,
        offloaded,
        listed,
        dataclasses.replace(train, energy=()),  # no power data: no energy keys
        api.collective("all-reduce", system="dgx-h100", gpus=16, size="64MiB"),
        api.infer("llama3-8b", "dgx-h100", 8, batch=4, input_len=512, output_len=64, tp=2),
    ]


def test_one_step_json_equals_the_field_loop() -> None:
    results = _results()
    assert any(metrics._fast_plan(type(result)) is not None for result in results)
    for result in results:
        fast, loop = metrics.contract_json(result), metrics._field_json(result)
        assert fast == loop
        assert list(fast) == list(loop)  # the same key order


def test_train_json_keeps_its_energy_and_tiers_last() -> None:
    keys = list(_results()[1].to_json())
    assert keys[-7:] == [
        "energy_J_per_step", "power_W", "energy_J_per_token", "tokens_per_kWh",
        "memory_breakdown_bytes_by_tier", "memory_capacity_bytes_by_tier", "memory_overflow_tiers",
    ]
    assert metrics._fast_plan(TrainResult) is not None


def test_a_flattened_field_before_keyed_ones_takes_the_loop() -> None:
    @dataclasses.dataclass(frozen=True)
    class Mixed:
        a: int
        extra: tuple[tuple[str, object], ...] = dataclasses.field(default=(), metadata=metrics.FLATTEN)
        b: tuple[tuple[str, float], ...] = ()
        c: str = "x"

    assert metrics._fast_plan(Mixed) is None
    value = Mixed(1, (("z", 2),), (("p50", 1.0),))
    assert list(metrics.contract_json(value)) == ["a", "z", "b", "c"]


def _deferred() -> list:
    """Fresh deferred results (api.train's), none of their fields read yet."""
    return [
        api.train("llama3-8b", "dgx-h100", 8, 16, 4096, tp=2),
        api.train(
            "megatron-1t", "dgx-a100", 3072, 3072, 2048, tp=8, pp=16, dp=24, micro_batch=8, zero=1,
            recompute="selective", offload="optimizer,weights,activations", offload_tier="host",
        ),
        api.train("llama3-8b", "dgx-h100", 8, 16, 4096, tp=2, recompute="selective", recompute_modules="core_attn,mlp"),
        api.train("deepseek-v3", "dgx-h100", 512, 4096, 4096, pp=16, ep=32, vpp=2, recompute="full"),
        api.train("llama3-405b", "dgx-h100", 8, 64, 8192),  # does not fit
    ]


def _filled(result: TrainResult) -> TrainResult:
    """The same result built from its fields (every field read, then passed to the constructor)."""
    return TrainResult(*(getattr(result, item.name) for item in dataclasses.fields(TrainResult)))


def test_a_deferred_train_result_serialises_as_its_fields_do() -> None:
    for result in _deferred():
        assert result._source is not None  # nothing built yet
        deferred = json.dumps(result.to_json())
        assert result._source is not None  # to_json did not fill the fields
        assert deferred == json.dumps(metrics._field_json(_filled(result)))  # same keys, order and values
        assert result._source is None  # reading the fields filled them, once
        assert json.dumps(result.to_json()) == deferred


def test_a_deferred_train_result_behaves_as_a_plain_dataclass() -> None:
    lazy, other = _deferred()[0], _deferred()[0]
    plain = _filled(_deferred()[0])
    assert lazy == plain and plain == other and lazy is not other  # equality reads the fields
    assert repr(lazy) == repr(plain)
    assert lazy.step_time_s == plain.step_time_s and dict(lazy.layout) == dict(plain.layout)
    changed = dataclasses.replace(_deferred()[0], energy=())
    assert changed.energy == () and changed.step_time_s == plain.step_time_s
    assert "energy_J_per_step" not in changed.to_json()
    copies = (copy.copy, copy.deepcopy, lambda result: pickle.loads(pickle.dumps(result)))
    for copied in (make(_deferred()[0]) for make in copies):
        assert copied == plain
        assert copied.to_json() == plain.to_json()
    assert dataclasses.asdict(_deferred()[0]) == dataclasses.asdict(plain)
    with pytest.raises(dataclasses.FrozenInstanceError):
        lazy.step_time_s = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        _deferred()[0].nonsense  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        plain.nonsense  # noqa: B018


def test_each_deferred_json_is_its_own() -> None:
    """A caller may change its JSON: nothing in it is shared with the next result's."""
    first = _deferred()[1].to_json()
    for key in ("memory_breakdown_bytes", "time_breakdown_s", "layout", "options", "power_W"):
        first[key]["x"] = 1  # type: ignore[index]
    second = _deferred()[1].to_json()
    assert all("x" not in second[key] for key in ("memory_breakdown_bytes", "time_breakdown_s", "layout", "options",
                                                   "power_W"))


def test_the_other_results_load_on_first_use_and_are_the_same_classes() -> None:
    """Issue 29: the results of every command but train live in fabricsim.metrics.others, reachable
    by name from fabricsim.metrics (what a plain import gets, ``dir`` and ``__all__`` list)."""
    import fabricsim.metrics as metrics
    from fabricsim.metrics import InferResult, others

    assert InferResult is others.InferResult and metrics.ClusterResult is others.ClusterResult
    public = {name for name in vars(others) if name.endswith(("Result", "Entry", "Summary", "Load"))}
    public -= {"TrainResult"}
    assert public == set(metrics._OTHERS) and public <= set(metrics.__all__) and public <= set(dir(metrics))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        metrics.Nope  # noqa: B018
