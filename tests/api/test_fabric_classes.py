"""Traffic classes in the fabric loop (issue 26, item 3): ``train --fidelity packet`` with
``cc_params`` runs the job's collectives in class 0 and the ``--background`` tenant in
``background_class``; strict priority gives the job its quiet-fabric communication time back, never
better; one class is the model as it was."""

from __future__ import annotations

import pytest

from fabricsim import api
from fabricsim.errors import FabricsimError

CLASSES = ("classes=2", "background_class=1")  # strict priority (class_sched's default): class 0 first


def _step(background: str | None, cc_params: tuple[str, ...] | None, nic: str = "roce-400") -> dict:
    # 2 DGX H100 nodes, tp 8 x pp 2: the job's scale-out traffic is the pipeline hand-off, small enough
    # that no phase is cut (min_cut_factor 1); a RoCE NIC (PFC per priority, DCQCN)
    return api.simulate_train(
        "llama3-8b", "dgx-h100", 16, 16, 1024, fidelity="packet", tp=8, pp=2, nic=nic,
        background=background, cc_params=cc_params,
    ).to_json()  # fmt: skip


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return {
        "quiet": _step(None, None),
        "shared": _step("permutation:1", None),  # one FIFO: the tenant at line rate shares every queue
        "strict": _step("permutation:1", CLASSES),
    }


def test_strict_priority_for_the_jobs_class_restores_its_comm_time_but_never_beats_the_quiet_fabric(runs):
    busy = {name: run["comm_busy_s"] for name, run in runs.items()}
    assert busy["strict"].keys() == busy["shared"].keys() == busy["quiet"].keys()
    hand_off = "pp-send-recv"  # the collective on the NICs the tenant saturates
    assert busy["strict"][hand_off] < busy["shared"][hand_off]
    for kind in ("tp-all-gather", "tp-reduce-scatter"):  # inside a node (NVLink): the tenant never gets there
        assert busy["strict"][kind] == pytest.approx(busy["quiet"][kind], rel=1e-12), kind
        assert busy["shared"][kind] == pytest.approx(busy["quiet"][kind], rel=1e-12), kind
    for kind, quiet_s in busy["quiet"].items():  # physics bound: a lower class cannot speed the job up
        assert busy["strict"][kind] >= quiet_s * (1 - 1e-12), kind
    assert runs["quiet"]["step_time_s"] * (1 - 1e-12) <= runs["strict"]["step_time_s"] < runs["shared"]["step_time_s"]
    assert runs["strict"]["network"]["min_cut_factor"] == 1.0  # nothing extrapolated


def test_by_class_counts_the_jobs_flows_and_the_tenants_and_only_with_several_classes(runs):
    by_class = runs["strict"]["network"]["by_class"]
    assert set(by_class) == {"0", "1"}
    assert by_class["0"]["flows"] > 0 and by_class["1"]["flows"] > 0
    assert by_class["0"]["drops"] == by_class["1"]["drops"] == 0  # PFC on both classes
    assert "by_class" not in runs["shared"]["network"] and "by_class" not in runs["quiet"]["network"]


def test_two_classes_with_the_tenant_in_class_0_time_the_step_as_one_class(runs):
    same = _step("permutation:1", ("classes=2", "background_class=0"))
    assert same["step_time_s"] == runs["shared"]["step_time_s"]
    assert same["comm_busy_s"] == runs["shared"]["comm_busy_s"]
    assert same["network"]["by_class"]["1"]["flows"] == 0


def test_weighted_round_robin_with_equal_weights_gives_the_job_no_priority(runs):
    wrr = _step("permutation:1", (*CLASSES, "class_sched=wrr", "class_weights=1,1"))
    assert wrr["comm_busy_s"]["pp-send-recv"] > runs["strict"]["comm_busy_s"]["pp-send-recv"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"nic": "ib-ndr", "cc_params": CLASSES}, "credits"),  # InfiniBand: one class here
        ({"cc_params": ("classes=2", "background_class=2")}, "background_class=2"),
        ({"cc_params": ("classes=2", "class_weights=1,2,3")}, "class_weights"),
        ({"cc_params": ("nope=1",)}, "nope"),
        ({"cc_params": CLASSES, "fidelity": "flow"}, "--fidelity packet"),
    ],
)
def test_bad_class_settings_are_refused_before_a_run_naming_cc_param(kwargs, match):
    args = {"fidelity": "packet", "nic": "roce-400", "background": "permutation:1", **kwargs}
    with pytest.raises(FabricsimError) as caught:
        api.simulate_train("llama3-8b", "dgx-h100", 16, 16, 1024, tp=8, pp=2, **args)
    assert caught.value.field == "cc-param" and match in str(caught.value) and "\n" not in str(caught.value)
