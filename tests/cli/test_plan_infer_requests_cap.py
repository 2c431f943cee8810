"""``plan infer`` under a lowered ``FABRICSIM_MAX_REQUESTS``: the default stream of 500 requests is
refused only when a stream is served (--arrival-rate), and the error says it is the default (the user
gave no --requests to blame); a given --requests is refused as before, and is checked even without a
rate (never ignored)."""

import json

import pytest

from fabricsim.cli.app import main
from fabricsim.specs.inputs import ServingLoad

BASE = ["plan", "infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--input-len", "128",
        "--output-len", "16", "--top", "1"]  # fmt: skip


@pytest.fixture(autouse=True)
def _lowered_cap(monkeypatch) -> None:
    monkeypatch.setenv("FABRICSIM_MAX_REQUESTS", "10")


def test_without_a_stream_the_default_requests_are_not_refused(capsys) -> None:
    assert main([*BASE, "--json"]) == 0
    assert "serving" not in json.loads(capsys.readouterr().out)


def test_the_default_requests_over_the_cap_say_they_are_the_default(capsys) -> None:
    assert main([*BASE, "--arrival-rate", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: requests: the default of 500 requests per stream exceeds FABRICSIM_MAX_REQUESTS=10 "
                   "(raise FABRICSIM_MAX_REQUESTS or pass --requests N)")  # fmt: skip


@pytest.mark.parametrize("rate", [[], ["--arrival-rate", "5"]])
def test_a_given_requests_over_the_cap_is_refused_as_given(rate, capsys) -> None:
    assert main([*BASE, *rate, "--requests", "20"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: requests: 20 exceeds the cap 10 (set FABRICSIM_MAX_REQUESTS to raise it)"


def test_requests_within_the_cap_are_served(capsys) -> None:
    assert main([*BASE, "--arrival-rate", "5", "--requests", "10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["serving"]["requests"] == 10


def test_the_default_is_still_500(monkeypatch) -> None:
    monkeypatch.delenv("FABRICSIM_MAX_REQUESTS")
    assert ServingLoad.model_validate({"arrival_rate": 5.0}).requests == 500
