"""Start-up (issue 15): an analytic ``train``/``infer`` never imports the network simulator, scipy
or rich (for ``--json``); ``import fabricsim.api`` loads no family. Timings are in
benchmarks/bench_startup.py; this checks the imports, which do not depend on the machine's load."""

import os
import subprocess
import sys

HEAVY = ("scipy", "fabricsim.network.flow", "fabricsim.topology.routing", "rich")
PROBE = (
    "import sys, io, contextlib\n"
    "from fabricsim.cli.app import main\n"
    "with contextlib.redirect_stdout(io.StringIO()):\n"
    "    assert main(sys.argv[1:]) == 0\n"
    f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
)


def _loaded(*argv: str, heavy: tuple[str, ...] = HEAVY) -> str:
    probe = PROBE.replace(repr(HEAVY), repr(heavy))
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_analytic_train_and_infer_import_no_network_scipy_or_rich() -> None:
    train = ["train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--global-batch", "1536",
             "--seq-len", "2048", "--tp", "8", "--pp", "16", "--json"]
    infer = ["infer", "--model", "llama3-8b", "--system", "dgx-h100", "--gpus", "8", "--input-len", "128",
             "--output-len", "16", "--json"]
    assert _loaded(*train) == ""
    assert _loaded(*infer) == ""


def test_analytic_train_imports_no_numpy() -> None:
    """Issue 27: its energy figures count the system fabric in closed form (topology/clos_counts.py)
    instead of building the graph, so a JSON train never imports numpy (a third of its start-up)."""
    train = ["train", "--model", "megatron-1t", "--system", "dgx-a100", "--gpus", "3072", "--global-batch", "3072",
             "--seq-len", "2048", "--tp", "4", "--pp", "64", "--dp", "12", "--micro-batch", "4", "--json"]
    fat_tree = ["train", "--model", "llama3-8b", "--system", "gh200", "--gpus", "64", "--global-batch", "64",
                "--seq-len", "2048", "--json"]
    assert _loaded(*train, heavy=("numpy",)) == ""
    assert _loaded(*fat_tree, heavy=("numpy",)) == ""


def test_importing_the_api_loads_no_family() -> None:
    code = "import sys, fabricsim.api; print(sorted(m for m in sys.modules if m.startswith('fabricsim.api.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_json_train_builds_only_its_own_command() -> None:
    """Issue 27: the CLI imports and builds only the command it runs (cli/app.py SUBCOMMANDS), and a
    JSON train loads neither rich nor numpy nor the capex and cost-report modules."""
    train = ["train", "--model", "megatron-1t", "--system", "dgx-a100", "--gpus", "3072", "--global-batch", "3072",
             "--seq-len", "2048", "--tp", "4", "--pp", "64", "--dp", "12", "--micro-batch", "4", "--recompute", "full",
             "--zero", "1", "--json"]
    others = tuple(f"fabricsim.cli.{name}_cmd" for name in ("plan", "infer", "collective", "traffic", "cost", "serve"))
    cost_only = ("fabricsim.cost.prices", "fabricsim.cost.result")  # `fabricsim cost` only: a train needs its power
    assert _loaded(*train, heavy=(*others, *cost_only, "rich", "numpy")) == ""


def test_lazy_command_tree_is_the_full_app() -> None:
    """Every command of the registered app is reachable through the lazily built tree, with the same
    parameters, and in the order ``fabricsim --help`` lists them."""
    import typer.main

    from fabricsim.cli.app import _command, app

    full = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    lazy = _command().commands
    assert list(lazy) == list(full)
    for name, command in full.items():
        assert [p.name for p in lazy[name].params] == [p.name for p in command.params], name
        assert sorted(getattr(lazy[name], "commands", {})) == sorted(getattr(command, "commands", {})), name


def test_the_process_entry_point_freezes_the_gc_and_in_process_calls_do_not() -> None:
    """Issue 27: ``main()`` without argv (the console script) enlarges the collector's young
    generation and freezes the objects alive at its end out of the collector, so the interpreter's
    exit does not traverse them again, and skips pydantic's plugin discovery unless the user set
    PYDANTIC_DISABLE_PLUGINS; a caller that passes argv (tests, fuzzers, tools) keeps its collector
    as it was."""
    from fabricsim.cli.app import PROCESS_GC_THRESHOLD

    code = (
        "import gc, io, sys, contextlib\n"
        "from fabricsim.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['--version']) == 0\n"
        "    before = gc.get_freeze_count()\n"
        "    sys.argv = ['fabricsim', '--version']\n"
        "    assert main() == 0\n"
        "import os\n"
        "print(before, gc.get_freeze_count() > 0, gc.get_threshold()[0], os.environ['PYDANTIC_DISABLE_PLUGINS'])\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.split() == ["0", "True", str(PROCESS_GC_THRESHOLD), "__all__"]
    mine = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={**env, "PYDANTIC_DISABLE_PLUGINS": "logfire"},
    )
    assert mine.stdout.split()[-1] == "logfire"  # a user's own setting is kept
    code = "import gc\nfrom fabricsim.cli.app import main\nmain(['--version'])\nprint(gc.get_threshold()[0])\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split()[-1] == "700"  # CPython's default, untouched by an in-process call


def test_json_train_creates_no_other_result_and_reads_yaml_only_once(tmp_path) -> None:
    """Issue 29: a JSON train creates only its own result class (the others are in
    fabricsim.metrics.others, loaded on first use), and once its shipped YAML files are in the
    parsed cache (kept as bytecode is: here under PYTHONPYCACHEPREFIX) it never imports PyYAML."""
    train = ["train", "--model", "megatron-1t", "--system", "dgx-a100", "--gpus", "3072", "--global-batch", "3072",
             "--seq-len", "2048", "--tp", "4", "--pp", "64", "--dp", "12", "--micro-batch", "4", "--recompute", "full",
             "--zero", "1", "--json"]
    probe = PROBE.replace(repr(HEAVY), repr(("fabricsim.metrics.others", "yaml")))
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path)

    def loaded() -> str:
        argv = [sys.executable, "-c", probe, *train]
        done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
        return done.stdout.strip()

    assert loaded() == "yaml"  # the first run parses its files and fills the cache
    assert sorted(path.name for path in tmp_path.rglob("*.parsed.json")) == sorted(
        f"{name}.yaml.parsed.json" for name in ("megatron-1t", "dgx-a100", "a100-80gb", "nvlink3", "nvswitch-gen2",
                                                "ib-hdr", "quantum-qm8700", "pcie-gen4", "nccl_2_30", "components"))
    assert loaded() == ""
