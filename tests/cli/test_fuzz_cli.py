"""Fuzz the command line in-process with random bad and edge inputs (issue 15).

Every case starts from a small, valid invocation of one command and replaces one to three of its
options (or adds one) with values from a pool of hostile ones: NaN, infinities, 1e400, 10**400,
2^53 + 1, negative and zero counts, garbage text, unicode digits, empty strings, directories,
devices, /proc paths, missing folders, non-UTF-8 and alias-bomb YAML. Each case must:

* exit 0 or 2, never with a traceback (an internal error would surface as an exception here);
* on 2, print exactly one ``error: ...`` line on stderr and nothing on stdout;
* write nothing outside the output folder (the working folder stays as it was, devices stay devices).

No case asserts a wall-clock limit: on a busy machine the first packet run alone compiles numba for
minutes. Hangs are ``benchmarks/fuzz_cli.py``'s to find: it times every case and reports those over
60 s.

The caps of :mod:`fabricsim.limits` are lowered for the run (the environment variables that raise
them lower them too), so a valid-but-large draw is refused in microseconds instead of running for
minutes: that is also a test of every cap. ``FABRICSIM_FUZZ_EXAMPLES`` scales the number of
cases per command (CI default below; ``benchmarks/fuzz_cli.py`` runs many more).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricsim.cli.app import main
from fabricsim.network.packet.params import RULES

EXAMPLES = int(os.environ.get("FABRICSIM_FUZZ_EXAMPLES", "600"))  # ~3,400 cases, ~20-30 s on 2 cores
LOW_CAPS = {
    "GPUS": 4096, "GLOBAL_BATCH": 4096, "TOKENS": 2**20, "REQUESTS": 2000, "TOP": 20, "SEEDS": 8,
    "HOSTS": 4096, "FLOWS": 2**16, "SEARCH_LAYOUTS": 10**6, "INPUT_BYTES": 2**20, "WORKERS": 2,
    "SWEEP_TASKS": 64, "SIMULATED_PASSES": 4096,
}

NUMBERS = ["-1", "0", "nan", "NaN", "inf", "-inf", "1e400", "10**400", "1e21", "9007199254740993",
           str(10**60), "", " ", "abc", "0x10", "1.5", "٣", "-0", "1_000", "4096", "4097", "1", "2", "8", "1\0"]
WORDS = ["", " ", "x", "full", "ful", "simulate", "flwo", "bf16", "int4", "fp8", "ecmp", "sprya", "max",
         "uniform:1,inf", "uniform:9,3", "uniform:5.5,5.9", "lognormal:100,1e300", "normal:nan,1", "1:0",
         "0.01:0.2", "nan:1", "4,8", "4,,8", ",", "1,2,x", "on-demand", "reserve", "2s", "150ms", "-1ms", "nans",
         "Et|(tt|)*30mL", "E(t|)*99999999L", "(t|)*", "Et*96L", "mlp,core_attn", "moe_act,,", "te", "unfused",
         # train's --fp8-recipe, --moe-dispatcher, --offload and --offload-tier words, valid and not
         "delayed", "block", "mxfp8", "nvfp4", "alltoall", "deepep", "optimizer", "optimizer,weights,activations",
         "weights,,", "host", "grace", "cxl"]
TOPOLOGIES = ["fat-tree:k=4", "fat-tree:k=4,gbps=nan", "fat-tree:k=4,gbps=inf", "fat-tree:k=1000000",
              "torus:dims=100x100x100", "torus:dims=0x4", "torus:dims=4x4x4x4", "dragonfly:a=100,p=100,h=100",
              "dragonfly:a=2,p=2,h=1", "leaf-spine:leaves=4,spines=2,hosts_per_leaf=4,oversubscription=nan",
              "rail-optimized:nodes=16,oversubscription=inf", "nvswitch:gpus=0", "dgx-h100:gpus=16",
              "dgx-h100:gpus=99999999", "nvl72", "fat-tree:", "fat-tree:k", "bogus"]
# OCS slices (plan infer --topology on a TPU): whole cubes and twists, valid and not, and auto
OCS = ["ocs-torus:4x4x4", "ocs-torus:auto", "ocs-torus:4x4x8,twisted=1", "ocs-torus:0x4x4", "ocs-torus:4x4x6",
       "ocs-torus:4x4x4,twisted=1", "ocs-torus:4x4x8,twisted=2", "ocs-torus:auto,twisted=1", "ocs-torus:",
       "ocs-torus:4x4", "ocs-torus:4x4x4,latency=1us", "ocs-torus:16x16x24", "ocs-torus:4x4x4x4", "fat-tree:k=4"]

# every --cc-param key with edge values, in range and out of it (issue 26: mtu_bytes=1.5 was a traceback)
CC_PARAMS = [f"{name}={value}" for name in sorted(RULES)
             for value in ("nan", "-1", "0", "1e-9", "0.5", "1", "1.5", "2", "64", "4096", "1e400", "1e300")]
# packet-fidelity words and buffer sizes, valid and not (issue 26: --buffer with credits was ignored)
PACKET_WORDS = ["pfc", "credit", "none", "dcqcn", "hpcc", "PFC", " credit", "ib", "uet", "roce"]
# bit-error rates, valid ([0, 1e-5]) and not (issue 26: --ber on train/infer/serve at packet fidelity)
BERS = ["0", "1e-12", "1e-9", "1e-6", "1e-5", "1.1e-5", "-1e-9", "-0", "nan", "inf", "1", "1e400", "x", ""]
BUFFERS = ["2MB", "64KiB", "4096", "4095", "1", "0", "-1", "nan", "1e400", "1PiB", "2PiB", "16MB", "x"]


def _paths(root: Path) -> list[str]:
    out = root / "out"
    return [str(out / "result.json"), str(out), "", " ", "/dev/null", "/dev/full", "/dev/zero",
            "/proc/fabricsim-fuzz", "/proc/self/status", str(out / "missing" / "x.json"), str(root / "bad.yaml"),
            str(root / "bomb.yaml"), str(root / "deep.json"), str(root / "requests.csv"), "/", "-", "x" * 5000, "a\0b"]


BASES: dict[str, list[str]] = {
    "train": ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--global-batch", "16",
              "--seq-len", "1024", "--tp", "8"],
    "infer": ["infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8",
              "--input-len", "128", "--output-len", "16", "--batch", "4"],
    "serve": ["serve", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--tp", "8",
              "--arrival-rate", "5", "--requests", "20", "--input-len", "100", "--output-len", "8", "--seed", "1"],
    "traffic": ["traffic", "permutation", "--topology", "fat-tree:k=4", "--seed", "1", "--size", "1MiB"],
    "collective": ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1MiB"],
    "traffic-packet": ["traffic", "incast", "--topology", "fat-tree:k=4", "--seed", "1", "--size", "64KiB",
                       "--hosts", "4", "--fidelity", "packet"],
    "collective-net": ["collective", "all-reduce", "--system", "dgx-h100", "--gpus", "8", "--size", "1MiB",
                       "--fidelity", "packet", "--topology", "fat-tree:k=4"],
    "plan-train": ["plan", "train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8",
                   "--global-batch", "16", "--seq-len", "1024", "--tp", "8", "--top", "2"],
    "plan-infer": ["plan", "infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8",
                   "--input-len", "128", "--output-len", "16", "--tp", "8", "--top", "2"],
    # an OCS slice per plan on a TPU pod (the options pool swaps in ocs-torus:auto and bad slices)
    "plan-infer-ocs": ["plan", "infer", "--model", "llama3-8b", "--system", "tpu-v5p", "--gpus", "64",
                       "--input-len", "128", "--output-len", "16", "--top", "2", "--topology", "ocs-torus:4x4x4"],
    # --fidelity packet inside one node (tp 8 on a DGX): the transport and BER checks, then a cheap run
    "train-packet": ["train", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--global-batch", "16",
                     "--seq-len", "1024", "--tp", "8", "--fidelity", "packet"],
    "goodput": ["goodput", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "64", "--global-batch", "64",
                "--seq-len", "2048", "--tp", "8", "--days", "1", "--seed", "1"],
}
# options each command may have replaced or added, and which pool their values come from
OPTIONS: dict[str, dict[str, str]] = {
    "train": {"--gpus": "n", "--global-batch": "n", "--seq-len": "n", "--tp": "n", "--pp": "n", "--dp": "n",
              "--cp": "n", "--ep": "n", "--vpp": "n", "--micro-batch": "n", "--zero": "n", "--recompute": "w",
              "--dtype": "w", "--fidelity": "w", "--trace": "p", "--seeds": "n", "--straggler": "w",
              "--jitter": "n", "--seed": "n", "--model": "p", "--system": "p", "--html": "p",
              "--pipeline-layout": "w", "--recompute-modules": "w", "--cross-entropy": "w", "--mtp-layers": "n",
              "--transport": "k", "--ber": "r", "--capacity-factor": "n", "--offload": "w", "--offload-tier": "w",
              "--lora-rank": "n", "--fp8-recipe": "w", "--moe-dispatcher": "w", "--expert-tp": "n"},
    "infer": {"--gpus": "n", "--tp": "n", "--pp": "n", "--ep": "n", "--batch": "w", "--input-len": "n",
              "--output-len": "n", "--dtype": "w", "--kv-dtype": "w", "--kv-spill-capacity": "w", "--trace": "p",
              "--fidelity": "w", "--seed": "n", "--model": "p", "--transport": "k", "--ber": "r", "--cc-param": "c"},
    "serve": {"--gpus": "n", "--arrival-rate": "n", "--requests": "n", "--input-len": "w", "--output-len": "w",
              "--seed": "n", "--slo-ttft": "w", "--slo-tpot": "w", "--token-budget": "n", "--max-batch": "n",
              "--disaggregate": "w", "--admission": "w", "--request-trace": "p", "--trace": "p",
              "--scheduler": "w", "--router": "w", "--shared-prefix": "n", "--speculative": "n", "--acceptance": "n",
              "--transport": "k", "--ber": "r", "--cc-param": "c"},
    "traffic": {"--topology": "t", "--seed": "n", "--size": "n", "--hosts": "n", "--fail-links": "n",
                "--fail-fraction": "n", "--routing": "w"},
    "collective": {"--gpus": "n", "--size": "n", "--algorithm": "w", "--system": "p", "--html": "p"},
    "traffic-packet": {"--cc-param": "c", "--buffer": "b", "--lossless": "k", "--cc": "k", "--size": "n",
                       "--fail-links": "n"},
    "collective-net": {"--gpus": "n", "--size": "n", "--algorithm": "w", "--fidelity": "w", "--topology": "t",
                       "--routing": "w", "--seed": "n", "--cc": "w", "--lossless": "w", "--cc-param": "c",
                       "--buffer": "w", "--trace": "p"},
    "plan-train": {"--gpus": "n", "--global-batch": "n", "--seq-len": "n", "--top": "n", "--tp": "w", "--pp": "w",
                   "--vpp": "w", "--zero": "w", "--recompute": "w", "--dtype": "w", "--refine": "n",
                   "--pipeline-layout": "w", "--recompute-modules": "w"},
    "plan-infer": {"--gpus": "n", "--input-len": "n", "--output-len": "n", "--top": "n", "--tp": "w",
                   "--slo-ttft": "w", "--slo-tpot": "w", "--arrival-rate": "n", "--seed": "n", "--requests": "n"},
    "plan-infer-ocs": {"--topology": "o", "--gpus": "n", "--tp": "w", "--top": "n", "--arrival-rate": "n",
                       "--requests": "n", "--objective": "w"},
    "train-packet": {"--transport": "k", "--ber": "r", "--seed": "n", "--placement": "w", "--nic": "w",
                     "--cc-param": "c"},
    "goodput": {"--days": "n", "--seed": "n", "--runs": "n", "--gpus": "n", "--tp": "n", "--pp": "n",
                "--pfs-bandwidth": "w", "--checkpoint-interval": "w", "--checkpoint-target": "w",
                "--link-failures": "w", "--restart": "w", "--failure-rates": "p", "--model": "p"},
}


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch root with an output folder and hostile input files."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "out").mkdir()
    (root / "work").mkdir()
    (root / "bad.yaml").write_bytes(b"name: x\nhidden_size: \xff\xfe\n")
    bomb = "a: &a [x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 8)}]\n" for i in range(16))
    (root / "bomb.yaml").write_text(bomb)
    (root / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "requests.csv").write_text("arrival_s,input_len,output_len\n0,1e30,10\nnan,5,5\n0,inf,1\n")
    return root


OUTPUT_FLAGS = ("--trace", "--export", "--db", "--html")


def _snapshot(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _pool(kind: str, root: Path) -> st.SearchStrategy[str]:
    pools = {"n": NUMBERS, "w": WORDS, "t": TOPOLOGIES, "o": OCS, "p": _paths(root), "c": CC_PARAMS + WORDS,
             "k": PACKET_WORDS, "b": BUFFERS, "r": BERS}
    return st.sampled_from(pools[kind]) | st.text(max_size=12).filter(lambda s: not s.startswith("-"))


@st.composite
def invocations(draw: st.DrawFn, command: str, root: Path) -> list[str]:
    argv = list(BASES[command])
    options = OPTIONS[command]
    for flag in draw(st.lists(st.sampled_from(sorted(options)), min_size=1, max_size=3, unique=True)):
        value = draw(_pool(options[flag], root))
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    return argv


def _check(argv: list[str], root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(root / "work")
    rc = main(argv)
    captured = capsys.readouterr()
    assert rc in (0, 2), (argv, rc, captured.err[-2000:])
    assert "Traceback" not in captured.err, (argv, captured.err[-2000:])
    if rc == 2:
        assert captured.out == "", argv
        assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, (argv, captured.err)
    work = root / "work"
    new = _snapshot(work) - before
    asked = {os.path.normpath(argv[i + 1]) for i, word in enumerate(argv[:-1]) if word in OUTPUT_FLAGS}
    assert new <= asked, (argv, new)  # only the file the command was asked to write
    for name in new:
        (work / name).unlink()
    for device in ("/dev/null", "/dev/full", "/dev/zero"):
        assert stat.S_ISCHR(os.lstat(device).st_mode), (argv, device)
    assert not os.path.lexists("/proc/fabricsim-fuzz")


@pytest.fixture()
def fuzz_env(arena: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in LOW_CAPS.items():
        monkeypatch.setenv(f"FABRICSIM_MAX_{name}", str(value))
    monkeypatch.chdir(arena / "work")
    return arena


FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
SLOW = settings(FUZZ, max_examples=max(10, EXAMPLES // 6))  # plan/serve/traffic run real searches when valid


@pytest.mark.parametrize("command", ["train", "infer", "collective"])
def test_fuzz_fast_commands(command: str, fuzz_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    @FUZZ
    @given(invocations(command, fuzz_env))
    def case(argv: list[str]) -> None:
        _check(argv, fuzz_env, capsys)

    case()


@pytest.mark.parametrize(
    "command",
    ["serve", "traffic", "traffic-packet", "collective-net", "plan-train", "plan-infer", "plan-infer-ocs",
     "train-packet", "goodput"],
)
def test_fuzz_search_commands(command: str, fuzz_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    @SLOW
    @given(invocations(command, fuzz_env))
    def case(argv: list[str]) -> None:
        _check(argv, fuzz_env, capsys)

    case()


@pytest.mark.parametrize("kind", ["systems", "models", "devices", "links", "switches"])
def test_fuzz_catalog_show(kind: str, fuzz_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    @SLOW
    @given(_pool("p", fuzz_env) | st.sampled_from(WORDS))
    def case(name: str) -> None:
        _check(["catalog", "show", kind, name], fuzz_env, capsys)

    case()


@FUZZ
@given(st.lists(st.text(max_size=16), max_size=6))
def test_fuzz_raw_argv(argv: list[str]) -> None:
    """Arbitrary words after ``fabricsim``: usage errors are one line too (help exits 0)."""
    rc = main(argv)
    assert rc in (0, 2), argv


def _axis(n: int, start: int = 2) -> str:
    return "[" + ", ".join(str(start + i) for i in range(n)) + "]"


SPEC_PARTS = ["tasks:", "  - kind: collective", "  - kind: train", "    grid: {gpus: [8, -1]}", "    grid: {}",
              "    list: [{op: all-reduce, system: dgx-h100, gpus: nan, size: 1e400}]", "    gird: {gpus: 8}",
              "name: x", "a: &a [1]", "b: *a", "\t", "- -", "tasks: []", "    grid: {gpus: [8], size: [0]}",
              "    list: [{op: all-reduce, system: dgx-h100, gpus: 8, size: 1MiB, extra: 1}]",
              # huge grids: refused by the task cap (lowered to 64 here) before anything is expanded
              f"    grid: {{op: all-reduce, system: dgx-h100, gpus: {_axis(200)}, size: {_axis(200)}}}",
              f"    grid: {{op: all-reduce, system: dgx-h100, gpus: {_axis(2000)}, size: {_axis(2000)},"
              f" algorithm: {_axis(2000)}}}",
              "    grid: {op: all-reduce, system: dgx-h100, gpus: [8, 16], size: [1MiB, 2MiB]}",
              # anchors and aliases: a reused list, an alias bomb, a merge key, an anchor on a grid
              "    grid: {op: all-reduce, system: dgx-h100, gpus: &g [8, 16], size: *g}",
              "x: &x [8, 8, 8, 8, 8, 8, 8, 8]\ny: &y [*x, *x, *x, *x, *x, *x, *x, *x]\nz: &z [*y, *y, *y, *y, *y, *y]",
              "    grid: {gpus: *z}", "    grid: &grid {gpus: 8}", "  - kind: collective\n    grid: *grid",
              "    <<: {grid: {gpus: 8}}", "    grid: {gpus: 8, gpus: 16}", "&top tasks: []"]


def _db_targets(root: Path) -> list[str]:
    """Where --db may point: a new store, and every place that is not one."""
    out = root / "out"
    return [str(out / "s.sqlite"), str(out / "s.sqlite"), str(root / "not-a-db.sqlite"), str(root / "bad.yaml"),
            str(out), str(out / "missing" / "s.sqlite"), "", " ", "/dev/null", "/dev/full", "/proc/fabricsim-fuzz",
            "/proc/self/status", "/", "x" * 5000, "a\0b"]


def test_fuzz_sweep_specs(fuzz_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Random spec files (YAML fragments, huge grids, anchors, garbage) and --db targets: a one-line
    error, never a traceback, a store outside the output folder or a non-database file overwritten."""
    spec = fuzz_env / "spec.yaml"
    not_db = fuzz_env / "not-a-db.sqlite"
    not_db.write_text("a text file that only looks like a store\n")
    keep = {path: path.read_bytes() for path in (not_db, fuzz_env / "bad.yaml")}

    parts = st.lists(st.sampled_from(SPEC_PARTS) | st.text(max_size=20), max_size=6)

    @SLOW
    @given(parts, st.sampled_from(_db_targets(fuzz_env)))
    def case(lines: list[str], db: str) -> None:
        spec.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        _check(["sweep", str(spec), "--db", db, "--workers", "1"], fuzz_env, capsys)
        assert all(path.read_bytes() == data for path, data in keep.items()), db

    case()
