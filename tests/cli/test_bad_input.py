"""Random bad and good input through the CLI: bad => exit 2, one stderr line, no stdout, no traceback."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricsim.api.communication import message_size
from fabricsim.catalog import load_system, names
from fabricsim.cli.app import main
from fabricsim.collectives import CollectiveOp
from fabricsim.errors import FabricsimError

OPS = [o.value for o in CollectiveOp]
SYSTEMS = names("systems")
# capsys is read (and so reset) after every generated input.
REUSE_CAPSYS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
CONTRACT_KEYS = {"op", "gpus", "size_bytes", "algorithm", "protocol", "time_s", "algbw_GBps", "busbw_GBps"}
# Arguments must not look like options (``--help`` would print help and succeed).
garbage = st.text(min_size=0, max_size=40).filter(lambda s: not s.startswith("-"))


def _a_size(text: str) -> bool:
    """Is ``text`` a size the CLI accepts (``1B``, ``2 KiB``, ``3``: random text can be one)?"""
    try:
        return message_size(text) > 0
    except FabricsimError:
        return False


bad_sizes = st.one_of(
    garbage.filter(lambda s: not _a_size(s)),
    st.sampled_from(["-1", "-5GiB", "1.5XB", "nan", "inf", "1e400", "GiB", "1 2", "0", "0.2", "", "0x10"]),
)
bad_gpus = st.one_of(
    st.integers(max_value=0).map(str),
    st.integers(min_value=100_001, max_value=10**30).map(str),
    st.sampled_from(["3", "5", "12", "eight", "8.5", "", "1e3"]),
)


def assert_user_error(capsys, argv):
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == 2, (argv, captured)
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ")
    assert "Traceback" not in captured.err


def command(op="all-reduce", system="dgx-h100", gpus="8", size="1MiB", *extra):
    return ["collective", op, "--system", system, "--gpus", gpus, "--size", size, *extra]


@REUSE_CAPSYS
@given(garbage.filter(lambda s: s.strip().lower() not in OPS and s.strip().lower().replace("_", "-") not in OPS
                      and s.strip().lower().replace("-", "") not in {o.replace("-", "") for o in OPS}))
def test_bad_op(capsys, op):
    assert_user_error(capsys, command(op=op))


@REUSE_CAPSYS
@given(garbage.filter(lambda s: s not in SYSTEMS))
def test_bad_system(capsys, system):
    assert_user_error(capsys, command(system=system))


@REUSE_CAPSYS
@given(bad_sizes)
def test_bad_size(capsys, size):
    assert_user_error(capsys, command(size=size))


@REUSE_CAPSYS
@given(bad_gpus)
def test_bad_gpu_count(capsys, gpus):
    assert_user_error(capsys, command(gpus=gpus))


@REUSE_CAPSYS
@given(garbage.filter(lambda s: s.strip().lower() not in {"auto", "ring", "tree", "halving-doubling", "nvls", "sharp",
                                                           "hierarchical", "direct"}))
def test_bad_algorithm(capsys, algorithm):
    assert_user_error(capsys, command("all-reduce", "dgx-h100", "8", "1MiB", "--algorithm", algorithm))


@st.composite
def good_inputs(draw):
    system_name = draw(st.sampled_from(SYSTEMS))
    node = load_system(system_name).gpus_per_node
    gpus = draw(st.one_of(st.sampled_from([d for d in range(1, node + 1) if node % d == 0]),
                          st.integers(1, 128).map(lambda n: n * node)))
    size = draw(st.one_of(st.integers(1, 2**40).map(str),
                          st.tuples(st.integers(1, 4096), st.sampled_from(["KiB", "MiB", "GiB", "MB", "GB", "B"]))
                          .map(lambda t: f"{t[0]}{t[1]}")))
    return draw(st.sampled_from(OPS)), system_name, str(gpus), size


@REUSE_CAPSYS
@given(good_inputs())
def test_good_input_gives_the_json_contract(capsys, args):
    op, system, gpus, size = args
    rc = main(command(op, system, gpus, size, "--json"))
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    result = json.loads(captured.out)
    assert set(result) >= CONTRACT_KEYS
    assert result["op"] == op and result["gpus"] == int(gpus) and result["time_s"] > 0
