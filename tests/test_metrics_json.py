"""``contract_json`` builds a result's JSON in one step where the fields allow it (issue 27: to_json
was a tenth of an in-process train); it must equal the field-by-field build, keys in the same order."""

import dataclasses

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
