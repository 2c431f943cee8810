"""``api.train`` builds its TrainingOptions once per distinct settings (issue 27 speed work)."""

import pytest

from fabricsim import api
from fabricsim.api import training
from fabricsim.errors import FabricsimError

ARGS = ("llama3-8b", "dgx-h100", 8, 16, 4096)


def _settings(**given: object) -> dict[str, object]:
    return {name: given.get(name) for name in training.SETTINGS}


def test_equal_settings_share_one_options_object() -> None:
    first = training._options(_settings(overlap_grad_reduce=True))
    assert training._options(_settings(overlap_grad_reduce=True)) is first
    assert training._options(_settings()) is not first
    assert training._options(_settings()).overlap_grad_reduce is False


def test_unhashable_and_refused_settings_are_not_kept() -> None:
    listed = training._options(_settings(recompute_modules=["core_attn", "mlp"]))
    assert listed.recompute_modules == ("core_attn", "mlp")
    for _ in range(2):  # refused every time, not remembered as a value
        with pytest.raises(FabricsimError, match="moe-dispatcher"):
            training._options(_settings(moe_dispatcher="nope"))


def test_train_results_follow_the_settings() -> None:
    plain = api.train(*ARGS, tp=2).to_json()
    overlapped = api.train(*ARGS, tp=2, overlap_grad_reduce=True).to_json()
    assert overlapped["options"]["overlap_grad_reduce"] is True
    assert plain["options"]["overlap_grad_reduce"] is False
    assert api.train(*ARGS, tp=2).to_json() == plain
