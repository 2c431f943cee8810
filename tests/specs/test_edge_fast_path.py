"""``edge``'s fast path (issue 27: api.train in a loop) validates as the pydantic model does.

Every call here runs twice: through ``edge`` (its generated caller decides what it can) and through
the pydantic model alone (``checked_by_model``); values, types and errors must be the same, and
valid plain calls must not build the model.
"""

import functools
import inspect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricsim import api
from fabricsim.errors import FabricsimError
from fabricsim.specs import Recompute, edge_caller, inputs
from fabricsim.specs.inputs import (
    Batch,
    Degree,
    Depth,
    Duration,
    Fidelity,
    FidelityChoice,
    Gpus,
    PositiveFloat,
    RecomputeMode,
    Requests,
    Seed,
    Tokens,
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


def by_model(function):
    """``function`` with its arguments validated by the pydantic model alone (no fast path)."""
    signature = inspect.signature(function)
    return lambda *args, **kwargs: inputs.checked_by_model(function, signature, args, kwargs)


slow = by_model(sample)

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
    return ("ok", {key: (type(value), repr(value)) for key, value in result.items()})


@pytest.mark.parametrize(("args", "kwargs"), CALLS, ids=str)
def test_fast_path_validates_as_pydantic(args, kwargs) -> None:
    assert _outcome(fast, args, kwargs) == _outcome(slow, args, kwargs)


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


# An api.train-like signature with every kind of input the generated caller checks inline or hands on:
# counts with caps, a ZeRO stage, an enum choice (and one with a default that is a plain string, which
# pydantic passes unvalidated), floats, a duration, a seed, unions, a required keyword, a None default
# of a type without None, Any, **rest.
def wide(
    gpus: Gpus,
    batch: Batch,
    seq: Tokens = 2048,
    *,
    requests: Requests,
    tp: Degree | None = None,
    zero: ZeroStage | None = None,
    recompute: RecomputeMode | None = None,
    fidelity: FidelityChoice = "analytic",
    rate: PositiveFloat | None = None,
    interval: Duration | None = None,
    seed: Seed = 0,
    depth: Depth | None = None,
    flag: bool | None = None,
    switch: bool = True,
    name: str | None = None,
    tag: str = None,  # noqa: RUF013  # a given None is refused, a missing one is the default
    size: str | int = "1GiB",
    modules: str | list[str] | None = None,
    anything=None,
    **rest,
):
    return {key: value for key, value in locals().items() if key != "rest"} | {"rest": rest}


NAMES = list(inspect.signature(wide).parameters)[:-1]
VALID = {  # plain values each parameter accepts, all of which the generated caller decides
    "gpus": [1, 8, 2**20], "batch": [1, 16, 2**24], "seq": [1, 4096, 2**24], "requests": [1, 10**6],
    "tp": [None, 1, 4, 2**20], "zero": [None, 0, 3], "recompute": [None, "full", "selective", Recompute.FULL],
    "fidelity": ["analytic", "flow", Fidelity.PACKET], "rate": [None, 0.5, 2], "interval": [None, "2s", 1.5],
    "seed": [0, 7, 2**63 - 1], "depth": [None, 0, 2], "flag": [None, True, False], "switch": [True, False],
    "name": [None, "x", ""], "tag": ["y"], "size": ["1GiB", 1024], "modules": [None, "core_attn"],
    "anything": [None, [1]],
}
ODD = [  # values at or past the edge of some parameter's type
    None, 0, 1, 3, 4, -1, 2**20, 2**20 + 1, 2**24, 2**24 + 1, 10**6 + 1, 2**63, 2**64, -(2**63), True, False,
    8.0, 8.5, 0.0, -0.0, 1e300, float("nan"), float("inf"), -float("inf"), "full", "FULL", " selective ",
    "x", "8", "2s", "0s", "150ms", "analytic", "ANALYTIC", "flow", "", "1GiB", Recompute.FULL, Fidelity.FLOW,
    [1, 2], ("a",), ["a", "b"], b"8", Recompute, object, 2j,
]


class Eight(int):
    """An int subclass: not a plain int to the generated caller (the model decides)."""


class Text(str):
    """A str subclass: not a plain str to the generated caller (the model decides)."""


ODD += [Eight(8), Text("full")]
ANYTHING = st.one_of(st.sampled_from(ODD), st.integers(-3, 2**25), st.floats(), st.text(max_size=6))
BASE = ((8, 16), {"requests": 4})  # a valid call


@pytest.mark.parametrize("value", ODD, ids=repr)
@pytest.mark.parametrize("name", NAMES)
def test_each_odd_value_as_the_model(name, value) -> None:
    args, kwargs = BASE
    kwargs = {**kwargs, name: value}
    if name in ("gpus", "batch"):  # given by keyword and, separately, by position
        positional = tuple(value if NAMES[i] == name else arg for i, arg in enumerate(args))
        assert _outcome(wide_fast, positional, BASE[1]) == _outcome(wide_slow, positional, BASE[1])
        args, kwargs = (), {"gpus": 8, "batch": 16, **kwargs}
    assert _outcome(wide_fast, args, kwargs) == _outcome(wide_slow, args, kwargs)


ENVIRONMENTS = [None, "4", "1048576", "2000000", "junk", "0"]  # FABRICSIM_MAX_GPUS
DEFAULT_CAPS = (None, "1048576", "2000000")  # environments in which every VALID value is within the cap


@st.composite
def calls(draw):
    """(positional arguments, keyword arguments, whether every value is VALID and the call plain) of
    ``wide``: mostly VALID values with one odd one; one call in six of another shape (a duplicate,
    a required argument missing, one positional too many); now and then an unknown keyword."""
    values = {name: draw(st.sampled_from(VALID[name])) for name in NAMES}
    valid = draw(st.integers(0, 4)) == 0
    for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3)) if not valid else []:
        values[name] = draw(ANYTHING)
    given = [name for name in NAMES if name in ("gpus", "batch", "requests") or draw(st.booleans())]
    positional = draw(st.integers(0, 3))  # gpus, batch, seq
    shape = draw(st.sampled_from(["plain"] * 15 + ["duplicate", "missing", "too many"]))
    if shape == "too many":
        positional = 4
    if shape == "missing":
        given.remove(draw(st.sampled_from(["gpus", "batch", "requests"])))
    args = tuple(values[name] for name in NAMES[:positional])
    kwargs = {name: values[name] for name in given if name not in NAMES[:positional]}
    if shape == "duplicate":
        kwargs[draw(st.sampled_from(NAMES[:3]))] = 8
    if draw(st.integers(0, 5)) == 0:
        kwargs[draw(st.sampled_from(["extra", "other"]))] = draw(ANYTHING)
    return args, kwargs, valid and shape == "plain"


wide_fast = edge(wide)
wide_slow = by_model(wide)


@given(calls(), st.sampled_from(ENVIRONMENTS))
def test_generated_caller_accepts_and_refuses_as_the_model(call, environment) -> None:
    args, kwargs, decidable = call
    with pytest.MonkeyPatch.context() as patch:
        if environment is None:
            patch.delenv("FABRICSIM_MAX_GPUS", raising=False)
        else:  # set between calls of the same (already built) caller: read per call
            patch.setenv("FABRICSIM_MAX_GPUS", environment)
        expected = _outcome(wide_slow, args, kwargs)
        if decidable and environment in DEFAULT_CAPS:  # the generated caller decides it alone
            patch.setattr(inputs, "signature_model", _no_model)
        assert _outcome(wide_fast, args, kwargs) == expected


def _no_model(function):
    raise AssertionError("the pydantic model was built for a plain valid call")


def test_the_generated_caller_decides_plain_valid_calls(monkeypatch) -> None:
    wide_fast(8, 16, requests=4)  # built
    monkeypatch.setattr(inputs, "signature_model", _no_model)
    result = wide_fast(8, 16, 4096, requests=4, tp=2, zero=3, recompute="full", fidelity=Fidelity.FLOW, seed=3,
                       rate=2, interval=1.5, flag=True, switch=False, name="x", size=5, modules="a", extra=1)
    assert result["recompute"] is Recompute.FULL and result["rate"] == 2.0 and type(result["rate"]) is float
    assert result["rest"] == {"extra": 1}
    assert wide_fast(8, 16, requests=4)["fidelity"] == "analytic"  # a default is passed as is (a str here)


def test_the_variable_of_a_cap_is_read_on_every_call(monkeypatch) -> None:
    wide_fast(8, 16, requests=4)  # built with the variable unset
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", "2000000")
    assert wide_fast(2**20 + 1, 16, requests=4)["gpus"] == 2**20 + 1
    monkeypatch.setenv("FABRICSIM_MAX_GPUS", "junk")
    with pytest.raises(FabricsimError, match="FABRICSIM_MAX_GPUS"):
        wide_fast(8, 16, requests=4)
    assert _outcome(wide_fast, (8, 16), {"requests": 4}) == _outcome(wide_slow, (8, 16), {"requests": 4})
    monkeypatch.delenv("FABRICSIM_MAX_GPUS")
    assert _outcome(wide_fast, (2**20 + 1, 16), {"requests": 4})[1].startswith("gpus: 1048577 exceeds the cap 1048576")


def test_a_type_error_inside_the_function_is_its_own(monkeypatch) -> None:
    runs = []

    @edge
    def broken(gpus: Gpus, *, tp: Degree | None = None):
        runs.append(gpus)
        raise TypeError("from inside")

    with pytest.raises(TypeError, match="from inside"):
        broken(8, tp=2)
    assert runs == [8]  # run once: not taken for arguments the signature refuses and run again
    with pytest.raises(FabricsimError, match=r"^broken: too many positional arguments$"):
        broken(8, 2)  # arguments its signature refuses: the pydantic path's words


def test_a_wrapper_whose_signature_is_another_functions_is_called_by_keyword() -> None:
    def inner(gpus: Gpus, *, tp: Degree | None = None, recompute: RecomputeMode | None = None):
        return gpus, tp, recompute

    @functools.wraps(inner)
    def outer(*args, **kwargs):
        return inner(*args, **kwargs)

    assert edge_caller.positional_twin(outer, inspect.signature(outer)) is None  # its code is (*args, **kwargs)
    assert edge_caller.positional_twin(inner, inspect.signature(inner)) is not None
    assert edge(outer)(8, recompute="full") == (8, None, Recompute.FULL)
    assert edge(inner)(8, recompute="full", tp=2) == (8, 2, Recompute.FULL)


def test_a_lambda_and_keyword_only_parameters_given_by_position() -> None:
    checked = edge(lambda gpus, *, tp=None: (gpus, tp))  # its name, <lambda>, is not one to generate
    assert checked(8, tp=2) == (8, 2)
    with pytest.raises(FabricsimError, match="too many positional arguments"):
        checked(8, 2)  # the generated caller would take tp by position: edge does not let it


def test_the_positional_twin_runs_the_same_code_with_cells_and_a_closure() -> None:
    scale = 3

    @edge
    def nested(gpus: Gpus, *, tp: Degree | None = None, name: str = "x", **rest):
        def later():  # tp and name become cells of nested's frame
            return (gpus * scale, tp, name, rest)

        return later()

    assert edge_caller.positional_twin(nested.__wrapped__, inspect.signature(nested.__wrapped__)) is not None
    assert nested(2, tp=4, extra=1) == (6, 4, "x", {"extra": 1})
    assert nested(2, name="y") == (6, None, "y", {})
