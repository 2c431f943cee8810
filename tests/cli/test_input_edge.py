"""Regression tests of issue 15: every crash, hang and overwrite found by the randomised CLI run.

Each case must end with exit status 2, exactly one ``error: FIELD: ...`` line on stderr naming the
option, nothing on stdout, no traceback (no wall-clock limit here: speed belongs to benchmarks/).
"""

import json
import os
import stat

import pytest

from fabricsim.catalog import data_root
from fabricsim.cli.app import main

TRAIN = ["train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "64", "--global-batch", "64",
         "--seq-len", "2048", "--tp", "8"]
PLAN = ["plan", "train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "64", "--global-batch", "64",
        "--seq-len", "2048"]
SERVE = ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--arrival-rate", "1",
         "--requests", "10"]
PLAN_INFER = ["plan", "infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--input-len", "100",
              "--output-len", "10"]
TRAFFIC = ["traffic", "permutation", "--topology"]
HUGE = str(10**60)


def one_line_error(capsys, argv: list[str], field: str) -> str:
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc == 2, (argv, captured)
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: "), captured.err
    assert field in captured.err, captured.err
    return captured.err


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        ([*TRAIN, "--trace", "/tmp"], "trace: /tmp is a directory"),
        ([*TRAIN, "--trace", ""], "trace: the path is empty"),
        ([*TRAIN, "--trace", "/proc/fabricsim-no-such"], "trace"),
        ([*TRAIN, "--trace", "/dev/full"], "trace: /dev/full is not a regular file"),
        ([*TRAIN, "--trace", "/no-such-folder/x.json"], "does not exist"),
        ([*TRAIN, "--trace", "a\0b"], "NUL"),
        ([*SERVE, "--request-trace", "a\0b"], "NUL"),
        (["collective", "all-reduce", "--system", "dgx\0", "--gpus", "8", "--size", "1MiB"], "system"),
        ([*SERVE, "--seed", "-1"], "seed"),
        ([*TRAFFIC, "fat-tree:k=4", "--seed", "-1"], "seed"),
        ([*PLAN_INFER, "--arrival-rate", "1", "--seed", "-1"], "seed"),
        ([*SERVE, "--input-len", "uniform:1,inf"], "input-len"),
        ([*SERVE, "--input-len", "uniform:nan,5"], "input-len"),
        ([*SERVE, "--input-len", "1e400"], "input-len"),
        ([*SERVE, "--input-len", "10**400"], "input-len"),
        ([*SERVE, "--input-len", "uniform:9,3"], "input-len"),
        ([*SERVE, "--input-len", "uniform:5.5,5.9"], "input-len"),
        ([*SERVE, "--output-len", "lognormal:100,1e300"], "output-len"),
        ([*SERVE, "--output-len", HUGE], "output-len"),
        ([*SERVE, "--requests", "1e21"], "requests"),
        ([*SERVE, "--requests", "100000000000"], "requests: 100000000000 exceeds the cap"),
        ([*SERVE, "--slo-ttft", "nan"], "slo-ttft"),
        ([*SERVE, "--slo-tpot", "-1"], "slo-tpot"),
        ([*SERVE, "--slo-tpot", "0"], "slo-tpot"),
        ([*SERVE, "--slo-ttft", "inf"], "slo-ttft"),
        ([*SERVE, "--trace", "requests.csv"], "--request-trace"),
        ([*PLAN_INFER, "--slo-ttft", "nan"], "slo-ttft"),
        ([*PLAN_INFER, "--ttft-slo-ms", "200"], "--slo-ttft"),
        ([*TRAFFIC, "rail-optimized:nodes=16,oversubscription=nan"], "oversubscription"),
        ([*TRAFFIC, "fat-tree:k=4,gbps=nan"], "gbps"),
        ([*TRAFFIC, "fat-tree:k=4,gbps=inf"], "gbps"),
        ([*TRAFFIC, "torus:dims=100x100x100"], "FABRICSIM_MAX_HOSTS"),
        ([*TRAFFIC, "dragonfly:a=100,p=100,h=100"], "FABRICSIM_MAX_HOSTS"),
        (["traffic", "all-to-all", "--topology", "fat-tree:k=64"], "FABRICSIM_MAX_FLOWS"),
        ([*TRAFFIC, "fat-tree:k=4", "--size", "0"], "size"),
        ([*TRAFFIC, f"fat-tree:k={HUGE}"], "k"),
        ([*TRAIN[:-2], "--global-batch", "9007199254740993"], "FABRICSIM_MAX_GLOBAL_BATCH"),
        ([*PLAN[:-4], "--global-batch", "9007199254740993", "--seq-len", "2048"], "global-batch"),
        ([*PLAN, "--top", "1000000"], "FABRICSIM_MAX_TOP"),
        ([*TRAIN, "--seq-len", HUGE], "seq-len"),
        ([*TRAIN, "--gpus", HUGE], "gpus"),
        ([*TRAIN, "--recompute", "ful"], "did you mean full"),
        ([*TRAIN, "--fidelity", "flwo"], "did you mean flow"),
        ([*TRAIN, "--fidelity", "simulate", "--jitter", "nan"], "jitter"),
        ([*TRAIN, "--fidelity", "simulate", "--seeds", "100000000"], "seeds"),
        (["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1e400"], "size"),
        ([*PLAN, "--vpp", "0"], "vpp"),
        ([*PLAN, "--tp", "x"], "tp"),
    ],
)
def test_refused_with_one_line(capsys, argv: list[str], field: str) -> None:
    one_line_error(capsys, argv, field)


def test_plan_train_vpp_list_without_1_is_not_a_crash(capsys) -> None:
    """A vpp list without 1 (it crashed with AttributeError): plans where interleaving is possible,
    one error naming the constraints where it is possible nowhere."""
    rc = main([*PLAN, "--vpp", "2,4", "--json", "--top", "2"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    payload = json.loads(captured.out)
    assert payload["plans"] and {plan["layout"]["vpp"] for plan in payload["plans"]} <= {2, 4}
    one_line_error(capsys, [*PLAN, "--vpp", "7"], "--vpp")


def test_trace_never_replaces_a_device(capsys) -> None:
    before = os.stat("/dev/full")
    one_line_error(capsys, [*TRAIN, "--trace", "/dev/full"], "trace")
    after = os.lstat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_trace_parent_folder_is_not_created(capsys, tmp_path) -> None:
    one_line_error(capsys, [*TRAIN, "--trace", str(tmp_path / "new" / "t.json")], "does not exist")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"a: \xff\xfe\n", "not UTF-8"),
        (b"a: &a [1, 1]\nb: [*a, *a]\n", "aliases are not accepted"),
        (b"name: x\nhidden_size: 1e400\n", "model"),
    ],
)
def test_bad_model_files(capsys, tmp_path, body: bytes, field: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(body)
    argv = ["train", "--model", str(path), "--system", "dgx-h100", "--gpus", "8", "--global-batch", "8",
            "--seq-len", "128"]
    one_line_error(capsys, argv, field)


def test_system_yaml_with_a_bad_enum_or_scalar(capsys, tmp_path) -> None:
    text = (data_root() / "systems" / "dgx-h100.yaml").read_text()
    for changed in (text.replace("topology: rail-optimized", "topology: fast"),
                    text.replace("scale_up:\n", "scale_up: fast\nxscale_up:\n")):
        path = tmp_path / "s.yaml"
        path.write_text(changed)
        one_line_error(capsys, ["collective", "all-reduce", "--system", str(path), "--gpus", "8", "--size", "1MiB"],
                       "system")


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        ("0,1e30,10", "FABRICSIM_MAX_TOKENS"),
        ("0,inf,10", "line 2"),
        ("nan,10,10", "line 2"),
        ("1e400,10,10", "line 2"),
        ("0," + "9" * 5000 + ",10", "line 2"),
    ],
)
def test_bad_request_trace_rows(capsys, tmp_path, rows: str, words: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_len,output_len\n" + rows + "\n")
    err = one_line_error(capsys, [*SERVE, "--request-trace", str(path)], "request-trace")
    assert words in err


def test_search_work_guard_names_its_cap(capsys, monkeypatch) -> None:
    monkeypatch.setenv("FABRICSIM_MAX_SEARCH_LAYOUTS", "50")
    one_line_error(capsys, PLAN, "FABRICSIM_MAX_SEARCH_LAYOUTS")
    monkeypatch.setenv("FABRICSIM_MAX_SEARCH_LAYOUTS", "1")
    one_line_error(capsys, PLAN_INFER, "FABRICSIM_MAX_SEARCH_LAYOUTS")


def test_a_raised_cap_lets_the_input_through(capsys, monkeypatch) -> None:
    """The variable named in the message really raises the cap."""
    argv = [*TRAFFIC, "fat-tree:k=4", "--size", "1MiB", "--json"]
    monkeypatch.setenv("FABRICSIM_MAX_HOSTS", "10")
    one_line_error(capsys, argv, "FABRICSIM_MAX_HOSTS")
    monkeypatch.setenv("FABRICSIM_MAX_HOSTS", "100")
    assert main(argv) == 0
