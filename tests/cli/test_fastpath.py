"""The fast path of ``fabricsim train`` (cli/fastpath.py, issue 27): it reads exactly the options
typer declares, passes the command exactly what typer passes, prints the same bytes, declines
everything it cannot read as typer would, and keeps typer out of the process."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricsim.cli import app, fastpath, options, train_cmd, tree

KIND = {str: fastpath.STR, int: fastpath.INT, float: fastpath.FLOAT}
ENGINE_KEYS = {*options.SIMULATION_KEYS, *options.FABRIC_KEYS, *options.PACKET_KEYS}
BASE = ["train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--global-batch", "1536",
        "--seq-len", "2048"]
EVERY_OPTION = [
    "train", "--model", "deepseek-v3", "--system", "dgx-h100", "--gpus", "1024", "--global-batch", "8192",
    "--seq-len", "4096", "--tp", "2", "--pp", "8", "--dp", "64", "--cp", "1", "--ep", "64", "--vpp", "4",
    "--micro-batch", "1", "--zero", "1", "--recompute", "selective", "--sequence-parallel", "--dtype", "fp8",
    "--expert-tp", "1", "--flash-attention", "--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap",
    "--a2a-overlap", "--fp8-recipe", "current", "--capacity-factor", "1.25", "--moe-dispatcher", "deepep",
    "--cross-entropy", "te", "--mtp-layers", "1", "--account-for-embedding-in-pipeline-split",
    "--account-for-loss-in-pipeline-split", "--grad-reduce-in-fp32", "--pipeline-layout", "Et|(tt|)*30mL",
    "--recompute-modules", "mla_up_proj,mlp", "--lora-rank", "0", "--offload", "optimizer",
    "--offload-tier", "host", "--json",
]


def test_the_table_is_the_typer_commands_options() -> None:
    """Every option of the typer command that an analytic estimate forwards is in the table with
    its parameter, kind, flag values, requiredness and default; the engine's options are not; and
    nothing of typer's that the table cannot read (callbacks, env vars, counts, ranges) is declared."""
    command = tree._subcommand("train")
    seen_values, seen_flags = set(), set()
    for param in command.params:
        if param.name in ENGINE_KEYS:  # e.g. the repeatable --cc-param: typer reads these
            assert not set(param.opts + param.secondary_opts) & {*fastpath.TRAIN.values, *fastpath.TRAIN.flags}
            continue
        assert param.callback is None and param.envvar is None and not param.multiple and param.nargs == 1
        assert not param.count and param.min is None and param.max is None and not param.is_eager
        annotation = param.type_descriptor.annotation
        if param.is_flag:
            assert annotation is bool
            for option in param.opts:
                assert fastpath.TRAIN.flags[option] == (param.name, True)
            for option in param.secondary_opts:
                assert fastpath.TRAIN.flags[option] == (param.name, False)
            seen_flags.update(param.opts + param.secondary_opts)
        else:
            assert param.secondary_opts == []
            for option in param.opts:
                assert fastpath.TRAIN.values[option] == (param.name, KIND[annotation])
            seen_values.update(param.opts)
        assert (param.name in fastpath.TRAIN.required) == param.required
        if not param.required:
            assert fastpath.TRAIN.defaults[param.name] == param.default
    assert seen_values == set(fastpath.TRAIN.values)
    assert seen_flags == set(fastpath.TRAIN.flags)


@pytest.fixture
def record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, Any], bool]]:
    """What each path hands to the analytic estimate, with the types, instead of running it."""
    calls: list[tuple[dict[str, Any], bool]] = []

    def recorded(inputs: dict[str, Any], as_json: bool) -> None:
        calls.append(({key: (type(value), value) for key, value in inputs.items()}, as_json))

    monkeypatch.setattr(fastpath, "analytic_train", recorded)
    monkeypatch.setattr(train_cmd, "analytic_train", recorded)
    return calls


@pytest.mark.parametrize(
    "argv",
    [
        BASE,
        [*BASE, "--json"],
        EVERY_OPTION,
        [*BASE, "--no-sequence-parallel", "--no-flash-attention", "--no-overlap-grad-reduce", "--no-a2a-overlap",
         "--no-grad-reduce-in-fp32", "--no-account-for-loss-in-pipeline-split", "--capacity-factor", "2",
         "--zero", "0", "--tp", "8"],
        ["train", "--json", "--seq-len", "2048", "--tp", "8", "--gpus", "8", "--model", "./my model/config.json",
         "--global-batch", "999999999999999999", "--system", "dgx-h100", "--dtype", "bf16 ", "--recompute", "fülle"],
    ],
)
def test_the_fast_path_passes_what_typer_passes(argv: list[str], record: list) -> None:
    assert fastpath.run(list(argv)) == 0
    assert tree.run(list(argv)) == 0
    assert len(record) == 2
    assert record[0] == record[1]


@pytest.mark.parametrize(
    "extra",
    [
        ["--help"],
        ["--tp=8"],  # the --opt=value form
        ["--tp", "8", "--tp", "4"],  # given twice: typer takes the last
        ["--json", "--json"],
        ["--tp", "-8"],  # a sign
        ["--tp", "+8"],
        ["--tp", "08"],  # a leading zero
        ["--tp", "8.0"],
        ["--tp", "1e3"],
        ["--tp", " 8"],
        ["--tp", "\u0668"],  # a digit of another script
        ["--tp", "1" * 19],  # longer than the table reads
        ["--tp", ""],
        ["--tp"],  # no value
        ["--capacity-factor", "1."],
        ["--capacity-factor", ".5"],
        ["--capacity-factor", "1e3"],
        ["--capacity-factor", "nan"],
        ["--dtype", ""],
        ["--dtype", "--json"],
        ["--dtype", "-x"],
        ["--dtype", "bf\udcff16"],  # an undecodable byte of the command line
        ["--fidelity", "analytic"],  # the engine's options are typer's
        ["--seed", "1"],
        ["--trace", "t.json"],
        ["--topology", "fat-tree:k=8"],
        ["--cc-param", "classes=2"],  # repeatable, packet fidelity only
        ["--nope"],
        ["positional"],
        ["--"],
    ],
)
def test_the_fast_path_declines_what_it_cannot_read_as_typer_does(extra: list[str], record: list) -> None:
    assert fastpath.run([*BASE, *extra]) is None
    assert record == []


def test_the_fast_path_needs_every_required_option_and_the_train_command(record: list) -> None:
    for k in range(1, len(BASE), 2):
        assert fastpath.run(BASE[:k] + BASE[k + 2:]) is None
    assert fastpath.run([]) is None
    assert fastpath.run(["infer", *BASE[1:]]) is None
    assert fastpath.run(["--version"]) is None
    assert record == []


SMALL = ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--global-batch", "8", "--seq-len", "8"]
# Hand-tried edge cases (issue 27, after the fast path landed): the fast path either declines them
# or reads them as typer does; either way a user sees the same bytes and exit status.
EDGE_CASES = [
    [*BASE, "--tp", "8", "--tp", "4", "--json"],  # an option twice
    [*BASE, "--json", "--json"],
    [*BASE, "--", "--json"],  # options after --
    [*BASE[:-2], "--", "--seq-len", "2048"],
    [*BASE, "--tp", "\u0668", "--json"],  # digits of other scripts
    [*BASE, "--tp", "\uff18", "--json"],
    [*SMALL, "--gpus", "0", "--json"],
    [*SMALL, "--gpus", "-1", "--json"],
    [*SMALL, "--gpus", "8", "--tp", "3", "--json"],  # divides neither the GPUs nor the heads
    [*SMALL, "--gpus", "8", "--tp", "3"],
    [*SMALL, "--gpus", "9" * 5000, "--json"],  # over Python's int-string limit
    [*SMALL, "--gpus", "9" * 18, "--json"],  # the longest the fast path reads: the cap's message
    [*SMALL, "--gpus", "8", "--seq-len", "1e3", "--json"],
    [*BASE, "--capacity-factor", "9" * 18 + ".5", "--json"],
    [*BASE[:2], "x\x00y", *BASE[3:], "--json"],  # a NUL in a name
    [*BASE[:2], "/dev/null", *BASE[3:], "--json"],
    [*BASE, "--sequence-parallel", "--no-sequence-parallel", "--json"],
    ["train", "-h"],
]


def test_the_seed_does_not_change_an_analytic_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    """``--seed`` sends a run to typer without changing its analytic result, so comparing a run
    with and without it compares the two paths (as the edge cases below do by forcing typer)."""
    argv = [*BASE, "--tp", "8", "--pp", "16", "--json"]
    outputs = []
    for extra in ([], ["--seed", "0"], ["--seed", "7"]):
        assert app.main([*argv, *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2] != ""


@pytest.mark.parametrize(
    "argv",
    [
        *EDGE_CASES,
        [*BASE, "--tp", "8", "--pp", "16", "--json"],
        [*BASE, "--tp", "8", "--pp", "16"],  # the table, through rich
        EVERY_OPTION,
        [*BASE, "--tp", "7", "--json"],  # refused by the API: the same error line
        ["train", "--model", "nope", "--system", "dgx-a100", "--gpus", "8", "--global-batch", "8", "--seq-len", "8"],
    ],
)
def test_both_paths_print_the_same_bytes(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    fast = app.main(list(argv)), capsys.readouterr()
    monkeypatch.setattr(fastpath, "run", lambda args: None)
    typed = app.main(list(argv)), capsys.readouterr()
    assert fast == typed
    assert fast[1].out or fast[1].err.startswith("error: ")


# values the differential property below draws from: read by the fast path, declined by it, valid
# for the API and not (issue 27: the fast path must never print other bytes than typer)
TEXTS = ["bf16", "fp8", "fp7", "selective", "full", "none", "optimizer", "host", "cxl", "deepep", "current",
         "te", "mlp,core_attn", ",,", "Et|(tt|)*30mL", "(((", "llama3-8b", "mixtral-8x22b", "nope", "/dev/null",
         " ", "", "-x", "--json", "x\x00y", "\u0663"]
NUMBERS = ["0", "1", "2", "3", "8", "16", "64", "1024", "08", "-1", "+8", "1.5", "1.", ".5", "1e3", "nan",
           "\u0668", "9" * 18, "9" * 19, "9" * 5000, "1_000", " 8", ""]


@st.composite
def _train_argv(draw: st.DrawFn) -> list[str]:
    argv = list(draw(st.sampled_from([BASE, [*SMALL, "--gpus", "8"]])))
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            argv.append(draw(st.sampled_from(sorted(fastpath.TRAIN.flags))))
            continue
        option = draw(st.sampled_from(sorted(fastpath.TRAIN.values)))
        value = draw(st.sampled_from(TEXTS if fastpath.TRAIN.values[option][1] == fastpath.STR else NUMBERS))
        argv += [f"{option}={value}"] if draw(st.integers(0, 19)) == 0 else [option, value]
    if draw(st.integers(0, 9)) == 0:
        argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(["--", "--seed", "-h", "x"])))
    return argv


def test_the_fast_path_and_typer_print_the_same_for_drawn_command_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Differential: any command line drawn from the table's options (repeated, malformed, valid or
    not) gives the same exit status, stdout and stderr on the fast path as through typer."""
    monkeypatch.setenv("COLUMNS", "120")
    through_typer = lambda args: None  # noqa: E731

    @settings(deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(_train_argv())
    def case(argv: list[str]) -> None:
        fast = app.main(list(argv)), capsys.readouterr()
        with monkeypatch.context() as patched:
            patched.setattr(fastpath, "run", through_typer)
            typed = app.main(list(argv)), capsys.readouterr()
        assert fast == typed, argv

    case()


def _child(code: str, *argv: str, **kwargs: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, **kwargs)


def test_a_json_train_process_never_imports_typer_and_a_fallback_does() -> None:
    probe = (
        "import sys, io, contextlib\n"
        "from fabricsim.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(sys.argv[1:]) == 0\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'typer', 'rich', 'click'}))\n"
    )
    assert _child(probe, *BASE, "--tp", "8", "--pp", "16", "--json").stdout.split() == ["[]"]
    assert _child(probe, *BASE, "--tp", "8", "--pp", "16", "--json", "--seed", "0").stdout.split() == ["['typer']"]
    assert _child("import sys, fabricsim.cli.app; print('typer' in sys.modules)").stdout.split() == ["False"]


@pytest.mark.parametrize("extra", [[], ["--seed", "0"]])  # the fast path, then typer's
def test_a_closed_pipe_exits_1_without_a_traceback(extra: list[str]) -> None:
    """Both paths end a run whose reader went away (``| head``) as typer does: status 1, quietly."""
    code = "import sys; from fabricsim.cli.app import main; sys.exit(main())"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    argv = [sys.executable, "-c", code, *BASE, "--tp", "8", "--pp", "16", "--json", *extra]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child writes: its write fails with EPIPE
    err = child.stderr.read()
    assert child.wait() == 1
    assert err == b""


@pytest.mark.parametrize("extra", [[], ["--seed", "0"]])  # the fast path, then typer's
def test_a_process_started_without_stdout_prints_nothing_and_exits_0(extra: list[str]) -> None:
    """As typer's echo: with file descriptor 1 closed (``>&-``) Python has no sys.stdout."""
    code = "import sys; from fabricsim.cli.app import main; sys.exit(main())"
    argv = [sys.executable, "-c", code, *BASE, "--tp", "8", "--pp", "16", "--json", *extra]
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          preexec_fn=lambda: os.close(1))
    assert (done.returncode, done.stderr) == (0, "")


def test_ctrl_c_exits_130_quietly_on_both_paths(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """typer turns a KeyboardInterrupt into status 130 (it was lost: the run said 0); the fast path
    does the same."""

    def interrupted(inputs: dict[str, Any], as_json: bool) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fastpath, "analytic_train", interrupted)
    monkeypatch.setattr(train_cmd, "analytic_train", interrupted)
    argv = [*BASE, "--json"]
    assert fastpath.run(list(argv)) == 130
    assert tree.run(list(argv)) == 130
    assert app.main(list(argv)) == 130
    assert capsys.readouterr().err == ""
