"""api.train reuses the engine's context across calls (issue 27: in-process speed); every result
equals a fresh context's, whatever was estimated before, in this thread or another."""

from __future__ import annotations

import threading

from fabricsim import api, catalog
from fabricsim.api.training import training_options, training_specs
from fabricsim.engine.training import analytic
from fabricsim.specs.memory_tier import parse_offload

CALLS = [  # model, system, gpus, batch, seq, layout and settings: shapes that share and do not share caches
    ("gpt3-175b", "dgx-a100", 1024, 1536, 2048, {"tp": 8, "pp": 16}),
    ("gpt3-175b", "dgx-a100", 1024, 1536, 2048, {"tp": 8, "pp": 16, "recompute": "full", "micro_batch": 2}),
    ("gpt3-175b", "dgx-a100", 1024, 1536, 4096, {"tp": 8, "pp": 8, "cp": 2}),
    ("gpt3-175b", "dgx-a100", 1024, 1536, 2048, {"tp": 8, "pp": 16, "overlap_grad_reduce": True}),
    ("megatron-1t", "dgx-a100", 3072, 3072, 2048,
     {"tp": 8, "dp": 384, "micro_batch": 8, "zero": 1, "recompute": "selective", "offload": "optimizer,weights"}),
    ("llama3-8b", "dgx-h100", 8, 128, 8192, {"dp": 4, "cp": 2, "zero": 1}),
    ("gpt3-175b", "dgx-a100", 1024, 1536, 2048, {"tp": 8, "pp": 16}),
]
SETTINGS = ("overlap_grad_reduce",)


def _fresh(model, system, gpus, batch, seq, given):
    layout_keys = {k: v for k, v in given.items() if k not in (*SETTINGS, "offload")}
    model_spec, system_spec, layout = training_specs(model, system, gpus, layout_keys)
    options = training_options(**{k: v for k, v in given.items() if k in SETTINGS})
    offload = parse_offload(given.get("offload"), None)
    estimate = analytic.estimate_training(model_spec, system_spec, layout, batch, seq, options, offload=offload)
    return estimate.step_time_s, estimate.memory_per_gpu_bytes, estimate.time


def _via_api(model, system, gpus, batch, seq, given):
    result = api.train(model, system, gpus, batch, seq, **given)
    payload = result.to_json()
    return payload["step_time_s"], payload["memory_per_gpu_bytes"], payload["time_breakdown_s"]


def test_every_call_equals_a_fresh_context() -> None:
    assert catalog.load_system("dgx-a100") is catalog.load_system("dgx-a100")  # the key is the spec object
    for call in CALLS + CALLS[::-1]:
        step, memory, time = _fresh(*call)
        got = _via_api(*call)
        assert got[0] == step and got[1] == memory
        assert got[2] == time.as_dict()


def test_another_thread_gets_the_same_results() -> None:
    here = [_via_api(*call) for call in CALLS]
    there: list = []
    worker = threading.Thread(target=lambda: there.extend(_via_api(*call) for call in CALLS[::-1]))
    worker.start()
    worker.join()
    assert there[::-1] == here


def test_a_thread_keeps_a_bounded_number_of_contexts_over_spec_pairs() -> None:
    from itertools import product

    from fabricsim.api import training

    for model in ("llama3-8b", "llama3-70b"):  # 2 spec pairs x 8 settings: twice the bound
        for grad, param, tp_comm in product((False, True), repeat=3):
            api.train(model, "dgx-h100", 64, 64, 4096, tp=8, overlap_grad_reduce=grad, overlap_param_gather=param,
                      tp_comm_overlap=tp_comm)
    held = training._held()
    assert 0 < sum(len(entry.contexts) for entry in held.values()) <= training.CONTEXTS_KEPT
    there: list = []
    worker = threading.Thread(target=lambda: there.append(training._held()))
    worker.start()
    worker.join()
    assert there == [{}]  # another thread holds its own
