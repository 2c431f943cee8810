"""``edge``'s fast path (issue 27: api.train in a loop) validates as the pydantic model does.

Every call here runs twice: through the fast path and with it switched off (the pydantic model
alone); values, types and errors must be the same, and valid plain calls must not build the model.
"""

import pytest

from fabricsim import api
from fabricsim.errors import FabricsimError
from fabricsim.specs import Recompute, inputs
from fabricsim.specs.inputs import (
    Batch,
    Degree,
    Duration,
    Gpus,
    PositiveFloat,
    RecomputeMode,
    ZeroStage,
    edge,
)


def sample(
    gpus: Gpus,
    batch: Batch,
    *,
    tp: Degree | None = None,
    zero: ZeroStage | None = None,
    recompute: RecomputeMode | None = None,
    rate: PositiveFloat | None = None,
    interval: Duration | None = None,
    flag: bool | None = None,
    name: str | None = None,
    anything=None,
    **rest,
):
    return {"gpus": gpus, "batch": batch, "tp": tp, "zero": zero, "recompute": recompute, "rate": rate,
            "interval": interval, "flag": flag, "name": name, "anything": anything, "rest": rest}


fast = edge(sample)
slow = edge(sample)  # its fast path is switched off: every call of it runs with _FastEdge.of patched

CALLS = [
    ((8, 16), {}),
    ((8.0, 16), {"tp": 2, "zero": 1, "recompute": "full"}),
    ((8,), {"batch": 16, "recompute": Recompute.SELECTIVE, "rate": 2, "interval": "150ms"}),
    ((8, 16), {"flag": True, "name": "x", "anything": [1, 2], "extra": 3}),
    ((8, 16), {"rate": 0.5, "interval": 2.0}),
    ((8, 16), {"tp": None, "zero": None, "recompute": None, "flag": None, "name": None}),  # given None: the default
    ((8, 16), {"recompute": "FULL"}),  # not an exact value: parse_choice decides
    ((8, 16), {"recompute": " selective "}),
    ((8, 16), {"tp": 2**20}),  # at the cap
    ((8, 16), {"tp": 2**20 + 1}),  # over it
    ((8, 16), {"zero": 3, "tp": True}),
    ((None, 16), {}),
    # refused: the error must be the pydantic path's (first bad field in declaration order)
    ((True, 16), {}),
    ((0, 16), {}),
    ((8, -1), {"tp": "x"}),
    ((8, 16), {"zero": 4, "recompute": "fulll"}),
    ((8, 16), {"rate": float("nan")}),
    ((8, 16), {"rate": 0.0}),
    ((8, 16), {"interval": "fast"}),
    ((8, 16), {"flag": 1}),
    ((8, 16), {"name": 3}),
    ((8, 16, 3), {}),
    ((8,), {"gpus": 8, "batch": 16}),
    ((8,), {}),
    ((8, 10**12), {}),
]


def _outcome(function, args, kwargs):
    try:
        result = function(*args, **kwargs)
    except FabricsimError as exc:
        return ("error", str(exc))
    return ("ok", {key: (type(value), value) for key, value in result.items()})


@pytest.mark.parametrize(("args", "kwargs"), CALLS, ids=str)
def test_fast_path_validates_as_pydantic(monkeypatch, args, kwargs) -> None:
    monkeypatch.setattr(inputs._FastEdge, "of", staticmethod(lambda function, signature: None))
    expected = _outcome(slow, args, kwargs)
    monkeypatch.undo()
    assert _outcome(fast, args, kwargs) == expected


def test_a_lowered_cap_is_checked_on_the_fast_path(monkeypatch) -> None:
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", "4")
    assert _outcome(fast, (4, 16), {"tp": 4})[0] == "ok"
    assert _outcome(fast, (8, 16), {}) == ("error", "gpus: 8 exceeds the cap 4 (set FABRICSIM_MAX_GPUS to raise it)")
    assert _outcome(fast, (4, 16), {"tp": 8})[1].startswith("tp: 8 exceeds the cap 4")


def test_plain_valid_calls_skip_the_model(monkeypatch) -> None:
    api.train("llama3-8b", "dgx-h100", 8, 16, 4096, tp=2)  # the fast path of train is built here

    def no_model(function):
        raise AssertionError("the pydantic model was built for a plain valid call")

    monkeypatch.setattr(inputs, "signature_model", no_model)
    result = api.train("llama3-8b", "dgx-h100", 8, 16, 4096, tp=2, recompute="selective", zero=1)
    assert result.fits
    assert fast(8, 16, tp=2)["tp"] == 2
    with pytest.raises(AssertionError):  # a refusal goes to the model, which words the error
        api.train("llama3-8b", "dgx-h100", 0, 16, 4096)
