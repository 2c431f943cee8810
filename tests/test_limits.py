"""``limits.cap`` reads ``FABRICSIM_MAX_*`` on every check and parses each distinct text once
(issue 27: the caps were a tenth of an in-process train); every change of the environment counts."""

import os

import pytest

from fabricsim import limits
from fabricsim.errors import FabricsimError


def test_cap_follows_every_change_of_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("FABRICSIM_MAX_GPUS", raising=False)
    assert limits.cap("GPUS") == limits.CAPS["GPUS"]
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", "12")
    assert limits.cap("GPUS") == 12
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", "13")
    assert limits.cap("GPUS") == 13
    os.environ["FABRICSIM_MAX_GPUS"] = "12"  # back to a text parsed before
    assert limits.cap("GPUS") == 12
    del os.environ["FABRICSIM_MAX_GPUS"]
    assert limits.cap("GPUS") == limits.CAPS["GPUS"]


def test_a_bad_cap_is_refused_every_time(monkeypatch) -> None:
    monkeypatch.setenv("FABRICSIM_MAX_TOKENS", "lots")
    for _ in range(2):  # a refusal is not remembered as a value
        with pytest.raises(FabricsimError, match="FABRICSIM_MAX_TOKENS: not an integer"):
            limits.cap("TOKENS")
    monkeypatch.setenv("FABRICSIM_MAX_TOKENS", "0")
    with pytest.raises(FabricsimError, match="must be positive"):
        limits.cap("TOKENS")


def test_a_replaced_environment_is_read_too(monkeypatch) -> None:
    monkeypatch.setattr(os, "environ", {"FABRICSIM_MAX_TOP": "7"})
    assert limits.cap("TOP") == 7
    monkeypatch.setattr(os, "environ", {})
    assert limits.cap("TOP") == limits.CAPS["TOP"]


def test_the_edge_checks_against_the_current_cap(monkeypatch) -> None:
    from fabricsim import api

    api.train("llama3-8b", "dgx-h100", 8, 16, 4096, tp=2)
    monkeypatch.setenv("FABRICSIM_MAX_GLOBAL_BATCH", "8")
    with pytest.raises(FabricsimError, match="global-batch: 16 exceeds the cap 8"):
        api.train("llama3-8b", "dgx-h100", 8, 16, 4096, tp=2)
