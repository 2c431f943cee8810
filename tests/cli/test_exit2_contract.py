"""The exit-2 contract of every command, from one shared table of bad values (issue 17).

The command tree is walked from the typer app itself (:func:`commands`), so a command or an option
registered later is covered or this file fails: every leaf command needs a minimal valid base
invocation in :data:`BASES`, and every one of its parameters needs a kind of value in :data:`KINDS`
(or a reason in :data:`NO_BAD_VALUE`). Each kind draws its bad values from the one shared table
:data:`BAD`. For every (command, parameter, bad value) the base invocation with that one value
changed must, through the in-process entry point :func:`fabricsim.cli.app.main`:

* exit with status 2;
* print exactly one non-empty line on stderr, starting with ``error:``, naming the parameter (its
  name, or a word of :data:`FIELD_WORDS`), and no traceback;
* print nothing on stdout;
* create, change or remove no file (the base writes its outputs into the arena, so a refusal that
  came after a half-done run would show here).

``test_base_is_valid`` runs each base once and expects exit 0 with its outputs written, so a refusal
above is the bad value's doing and not a broken base. Bad-input refusals never need torch; only the
valid ``measure`` run does (skipped without it).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabricsim.cli.app import _command, main
from fabricsim.network.packet.params import RULES, Kind

# ---------------------------------------------------------------------------------------------
# The shared table: bad values per kind of option. ``{dir}``, ``{missing}``, ``{latin1}`` and
# ``{out}`` are paths in the test's arena (see ``arena``).
NUMBER_JUNK = ["nan", "NaN", "inf", "-inf", "1e400", "10**400", "abc", "", " ", "1\0"]


def _cc_param_bad() -> list[str]:
    """``NAME=VALUE`` outside each ``--cc-param`` key's rule (issue 26: every key, type and range)."""
    out = ["x", "timer_s=nan", "bogus=1", "timer_s=-1", "", "timer_s", "mtu_bytes=abc"]
    for name, rule in RULES.items():
        values = ["nan", "inf", "-inf", "1e400", f"{rule.low - 1:g}"]
        values += [f"{rule.low:g}"] if rule.open_low else []
        values += [f"{rule.high * 2 + 1:g}"] if rule.high < float("inf") else []
        values += [f"{rule.low + 0.5:g}"] if rule.kind != Kind.REAL else []
        out += [f"{name}={value}" for value in values]
    return out

BAD: dict[str, list[str]] = {
    # counts (>= 1): GPUs, batch, lengths, parallel sizes, requests, runs, ...
    "count": ["-1", "0", "1.5", str(10**400), *NUMBER_JUNK],
    # integers >= 0 where 0 is valid (seeds, failures, refinement rounds, warm-up calls)
    "natural": ["-1", "1.5", str(10**400), *NUMBER_JUNK],
    # the ZeRO stage 0..3
    "zero_stage": ["-1", "4", *NUMBER_JUNK],
    # positive reals (days, rates, durations)
    "positive": ["-1", "0", "-0", *NUMBER_JUNK],
    # reals >= 0 (jitter sigma)
    "non_negative": ["-1", "-1e-9", *NUMBER_JUNK],
    # fractions in [0, 1] (failed cable share) / (0, 1] (offered load)
    "fraction": ["-1", "1.5", *NUMBER_JUNK],
    "open_fraction": ["-1", "0", "1.5", *NUMBER_JUNK],
    # byte sizes (64MiB, 1e6, 2GB)
    "size": ["-1", "0", "-5GiB", "1.5XB", "GiB", str(10**400), *NUMBER_JUNK],
    # bandwidth (2TB/s)
    "bandwidth": ["-1", "0", "-2TB/s", "xTB/s", *NUMBER_JUNK],
    # durations (2s, 150ms; a bare number is seconds)
    "duration": ["-1", "0", "-1ms", "2parsecs", *NUMBER_JUNK],
    # a token-count distribution (an integer, uniform:LO,HI, lognormal:..., normal:...)
    "distribution": ["-1", "0", str(10**400), "uniform:9,3", "uniform:1,inf", "uniform:nan,5",
                     "lognormal:100,1e300", "normal:nan,1", "poisson:3", "zipf:0,1,5", "zipf:1,5", "zipf:1,9,3",
                     "zipf:nan,1,5", "zipf:1,1,1e400", "zipf:11,1,5", *NUMBER_JUNK],
    # an arrival process (poisson or gamma:CV)
    "arrival": ["bogus", "", "gamma:", "gamma:0", "gamma:-1", "gamma:nan", "gamma:inf", "gamma:11", "poisson:2"],
    # comma-separated integer lists of a search space (plan --tp 4,8)
    "count_list": ["-1", "0", "4,-8", "4,,8", ",", "4,x", str(10**400), *NUMBER_JUNK],
    "stage_list": ["-1", "4", "0,7", ",", "x", *NUMBER_JUNK],
    # a word from a fixed set
    "enum": ["bogus", "", " ", "x" * 300],
    "enum_list": ["bogus", "bf16,bogus", ",", "", " "],
    # catalog names (also accept a YAML path)
    "catalog": ["no-such-item", "", " ", "{dir}", "{missing}", "{latin1}", "dgx\0"],
    # a YAML/JSON/CSV/log input file
    "input": ["", "{dir}", "{missing}", "{latin1}", "/dev/zero", "a\0b"],
    # a file to write
    "output": ["", "{dir}", "{out}/no-such-folder/x.out", "/dev/full", "/dev/null", "a\0b"],
    # free-form specific syntaxes
    "placement": ["bogus", "", " ", "random:", "random:x", "random:-1", "{dir}", "{missing}", "{latin1}"],
    "background": ["bogus", "", "permutation", "permutation:0", "permutation:2", "permutation:nan", ":0.5"],
    "topology": ["bogus", "", "fat-tree:", "fat-tree:k", "fat-tree:k=0", "fat-tree:k=4,gbps=nan",
                 "fat-tree:k=4,gbps=inf", f"fat-tree:k={10**400}", "torus:dims=0x4"],
    "straggler": ["nan:1", "-0.1:0.2", "0.01:-1", "2:0.2", "0.01", "x:y", "", "0.01:inf"],
    "ratio": ["0:1", "1:0", "-1:2", "x", "", "1:1:1", "nan:1"],
    "phases": ["detection=nan", "detection=-1", "detection=inf", "bogus=1", "x", "", "detection"],
    "interval": ["-1", "0", *NUMBER_JUNK],
    "batch": ["-1", "0", "maxx", str(10**400), *NUMBER_JUNK],
    "cc_param": _cc_param_bad(),
    "ber": ["x", "", "-1e-9", "1", "1e-3", "nan", "inf"],
    "address": ["", "x" * 300],
    "pipeline_layout": ["", " ", "x|y", "Et|tL", "(tt|)*", "E(t|)*99999999L"],
}
"""The bad values of each kind of option: each must be refused with exit 2 wherever that kind is used."""

NEEDS_PACKET = {"cc", "lossless", "cc_param", "buffer", "load", "duration", "trace", "transport", "ber"}
"""traffic options read only at packet fidelity: their bad values are tried with ``--fidelity packet``."""
COLLECTIVE_NETWORK = NEEDS_PACKET | {"topology", "routing", "seed"}
"""collective options read only at flow or packet fidelity: their bad values are tried with ``--fidelity packet``."""
FABRIC_PACKET = {"transport", "ber", "cc_params"}
"""train/infer/serve options read only at packet fidelity: their bad values are tried with ``--fidelity packet``."""

# ---------------------------------------------------------------------------------------------
# Per command: a small valid invocation (parameter name -> value; a list for a variadic argument;
# True for a flag) and the kind of each of its parameters.
GPU8 = {"model": "llama3-8b", "system": "dgx-h100", "gpus": "8", "tp": "8"}
BASES: dict[str, dict[str, object]] = {
    "calibrate nccl-tests": {"logs": ["{log}"], "system": "dgx-h100", "out": "{out}/cal.yaml", "as_json": True},
    "cluster": {"spec": "{cluster}", "as_json": True},
    "catalog list": {"kind": "systems", "as_json": True},
    "catalog show": {"kind": "systems", "name": "dgx-h100", "as_json": True},
    "collective": {"op": "all-reduce", "system": "dgx-h100", "gpus": "8", "size": "1MiB", "as_json": True},
    "cost": {"system": "dgx-h100", "gpus": "16", "as_json": True},  # two nodes: a scale-out fabric
    "goodput": {**GPU8, "days": "1", "global_batch": "8", "seq_len": "1024", "runs": "20", "seed": "1",
                "as_json": True},
    "infer": {**GPU8, "input_len": "128", "output_len": "16", "batch": "4", "trace": "{out}/infer.json",
              "as_json": True},
    "measure collective": {"ranks": "2", "sizes": "1KiB", "iters": "1", "warmup": "0", "out": "{out}/m.txt"},
    "plan infer": {**GPU8, "input_len": "128", "output_len": "16", "top": "1", "as_json": True},
    "plan train": {**GPU8, "global_batch": "8", "seq_len": "1024", "pp": "1", "top": "1", "as_json": True},
    "replay": {"traces": ["{et0}", "{et1}"], "trace_out": "{out}/replay.json", "as_json": True},
    "report": {"results": ["{result}"], "out": "{out}/report.html"},
    "serve": {**GPU8, "arrival_rate": "5", "requests": "10", "input_len": "64", "output_len": "4", "seed": "1",
              "as_json": True},
    "sweep": {"spec": "{spec}", "db": "{out}/sweep.sqlite", "workers": "1", "export": "{out}/sweep.csv",
              "as_json": True},
    "traffic": {"pattern": "permutation", "topology": "fat-tree:k=4", "seed": "1", "size": "1MiB", "as_json": True},
    "train": {**GPU8, "global_batch": "8", "seq_len": "1024", "trace": "{out}/train.json", "as_json": True},
    "validate": {"suite": "collectives", "as_json": True},
    "warmup": {"as_json": True},
}
HTML_FREE = {"report", "measure collective", "warmup"}  # they print no result payload: --html is refused (exit 2)

LAYOUT = {"tp": "count", "pp": "count", "dp": "count", "cp": "count", "ep": "count", "vpp": "count",
          "micro_batch": "count", "zero": "zero_stage", "recompute": "enum", "dtype": "enum"}
LAYOUT_LISTS = {"tp": "count_list", "pp": "count_list", "dp": "count_list", "cp": "count_list", "ep": "count_list",
                "vpp": "count_list", "micro_batch": "count_list", "zero": "stage_list", "recompute": "enum_list",
                "dtype": "enum_list"}
MODEL_SYSTEM = {"model": "catalog", "system": "catalog", "gpus": "count"}
SETTINGS = {  # train / plan train
    "fp8_recipe": "enum", "capacity_factor": "positive", "moe_dispatcher": "enum", "cross_entropy": "enum",
    "mtp_layers": "natural", "pipeline_layout": "pipeline_layout", "recompute_modules": "enum_list",
    "lora_rank": "natural"}
SWITCHES = {name: "an on/off flag pair: takes no value" for name in (
    "flash_attention", "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap", "a2a_overlap",
    "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split", "grad_reduce_in_fp32")}
VARIABILITY = {"fidelity": "enum", "trace": "output", "seeds": "count", "straggler": "straggler",
               "jitter": "non_negative", "link_jitter": "non_negative", "seed": "natural",
               "topology": "topology", "placement": "placement", "nic": "catalog", "background": "background",
               "transport": "enum", "ber": "ber", "cc_params": "cc_param"}
INFER_LAYOUT = {"tp": "count", "pp": "count", "ep": "count", "dtype": "enum", "kv_dtype": "enum"}
KINDS: dict[str, dict[str, str]] = {
    "calibrate nccl-tests": {"logs": "input", "system": "catalog", "out": "output", "op": "enum"},
    "catalog list": {"kind": "enum"},
    "catalog show": {"kind": "enum", "name": "catalog"},
    "cluster": {"spec": "input"},
    "collective": {"op": "enum", "system": "catalog", "gpus": "count", "size": "size", "algorithm": "enum",
                   "fidelity": "enum", "topology": "topology", "routing": "enum", "seed": "natural", "cc": "enum",
                   "lossless": "enum", "cc_param": "cc_param", "buffer": "size", "trace": "output",
                   "transport": "enum", "ber": "ber"},
    "cost": {"system": "catalog", "gpus": "count", "topology": "topology", "optics": "enum", "cooling": "enum",
             "load": "enum", "nic": "catalog", "switch": "catalog", "prices": "input"},
    "goodput": {**MODEL_SYSTEM, **LAYOUT, "days": "positive", "global_batch": "count", "seq_len": "count",
                "checkpoint_interval": "interval", "checkpoint_target": "enum", "link_failures": "enum",
                "failure_rates": "catalog", "pfs_bandwidth": "bandwidth", "restart": "phases", "runs": "count",
                "seed": "natural"},
    "infer": {**MODEL_SYSTEM, **INFER_LAYOUT, **VARIABILITY, "batch": "batch", "input_len": "count",
              "output_len": "count", "kv_spill": "enum", "kv_spill_capacity": "size"},
    "measure collective": {"op": "enum", "backend": "enum", "ranks": "count", "sizes": "size", "min_bytes": "size",
                           "max_bytes": "size", "iters": "count", "warmup": "natural", "out": "output"},
    "plan infer": {**MODEL_SYSTEM, **INFER_LAYOUT, "tp": "count_list", "pp": "count_list", "ep": "count_list",
                   "dtype": "enum_list", "kv_dtype": "enum_list", "input_len": "count", "output_len": "count",
                   "top": "count", "objective": "enum", "slo_tpot": "duration", "slo_ttft": "duration",
                   "tpot_slo_ms": "positive", "ttft_slo_ms": "positive", "batch": "count_list",
                   "max_batch": "count", "arrival_rate": "positive", "requests": "count", "seed": "natural",
                   "topology": "topology"},
    "plan train": {**MODEL_SYSTEM, **LAYOUT_LISTS, "global_batch": "count", "seq_len": "count", "top": "count",
                   "objective": "enum", "days": "positive", "refine": "natural", "expert_tp": "count_list",
                   "offload_tier": "enum_list", "topology": "topology", "placement": "placement", "nic": "catalog",
                   "background": "background",
                   **SETTINGS},
    "replay": {"traces": "input", "system": "catalog", "trace_out": "output"},
    "report": {"results": "input", "out": "output"},
    "serve": {**MODEL_SYSTEM, **INFER_LAYOUT, "arrival_rate": "positive", "request_trace": "input",
              "trace": "output", "requests": "count", "input_len": "distribution", "output_len": "distribution",
              "disaggregate": "ratio", "seed": "natural", "token_budget": "count", "max_batch": "count",
              "admission": "enum", "slo_ttft": "duration", "slo_tpot": "duration", "fidelity": "enum",
              "topology": "topology", "placement": "placement", "nic": "catalog", "background": "background",
              "transport": "enum", "ber": "ber", "cc_params": "cc_param", "link_jitter": "non_negative",
              "arrival": "arrival",
              "kv_pool": "catalog", "pool_sharing": "count",
              "scheduler": "enum", "router": "enum", "shared_prefix": "fraction", "speculative": "count",
              "acceptance": "fraction"},
    "sweep": {"spec": "input", "db": "output", "executor": "enum", "workers": "count", "export": "output"},
    "traffic": {"pattern": "enum", "topology": "topology", "routing": "enum", "seed": "natural", "size": "size",
                "hosts": "count", "fail_links": "natural", "fail_fraction": "fraction", "fidelity": "enum",
                "matrix": "input",
                "cc": "enum", "lossless": "enum", "cc_param": "cc_param", "buffer": "size", "load": "open_fraction",
                "duration": "positive", "trace": "output", "transport": "enum", "ber": "ber"},
    "train": {**MODEL_SYSTEM, **LAYOUT, **VARIABILITY, "global_batch": "count", "seq_len": "count",
              "expert_tp": "count", "offload": "enum_list", "offload_tier": "enum",
              **SETTINGS},
    "validate": {"suite": "enum", "system": "input"},
    "warmup": {},
}
NO_BAD_VALUE: dict[str, dict[str, str]] = {
    "*": {"as_json": "a flag: takes no value"},
    "cost": {"compare_rail_only": "a flag: takes no value"},
    "plan train": {"sequence_parallel": "an on/off flag pair: takes no value",
                   "search_offload": "an on/off flag pair: takes no value", **SWITCHES},
    "train": {"sequence_parallel": "an on/off flag pair: takes no value", "ecmp_rehash": "a flag", **SWITCHES},
    "traffic": {"spray": "a flag: takes no value"},
    "collective": {"spray": "a flag: takes no value"},
    "infer": {"cuda_graphs": "an on/off flag pair: takes no value"},
    "serve": {"cuda_graphs": "an on/off flag pair: takes no value"},
    "report": {"title": "any text is a title (it is escaped in the page)"},
    "sweep": {"address": "read only by --executor ray (ray is optional and absent in CI)"},
}
FIELD_WORDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("catalog show", "name"): ("system",),  # the base shows a system: the error names the kind
    ("cost", "nic"): ("link",),  # a NIC is a catalog link
    ("replay", "trace_out"): ("trace",),  # the flag is --trace
    ("cost", "topology"): ("topology", "k", "gbps", "dims"),  # a builder string's own keys
    ("traffic", "topology"): ("topology", "k", "gbps", "dims"),
    ("collective", "topology"): ("topology", "k", "gbps", "dims"),
    ("train", "topology"): ("topology", "k", "gbps", "dims"),
    ("infer", "topology"): ("topology", "k", "gbps", "dims"),
    ("serve", "topology"): ("topology", "k", "gbps", "dims"),
    ("plan train", "topology"): ("topology", "k", "gbps", "dims"),
    ("plan infer", "topology"): ("topology", "k", "gbps", "dims"),
    ("train", "cc_params"): ("cc-param",),  # the flag is --cc-param, as on traffic and collective
    ("infer", "cc_params"): ("cc-param",),
    ("serve", "cc_params"): ("cc-param",),
}
"""Words an error may use to name a parameter besides its own name (``seq_len`` / ``seq-len``)."""

DROP_WITH: dict[tuple[str, str], tuple[str, ...]] = {
    ("serve", "request_trace"): ("arrival_rate", "requests", "input_len", "output_len"),  # a file replaces them
    ("plan train", "dp"): ("tp",),
}
"""Base parameters left out when one parameter is set (they would conflict with it in a valid run)."""


# ---------------------------------------------------------------------------------------------
def commands() -> Iterator[tuple[str, object]]:
    """Every leaf command of the app: ("plan train", its click command), ... (the tree as registered)."""

    def walk(command: object, path: list[str]) -> Iterator[tuple[str, object]]:
        children = getattr(command, "commands", None)
        if children:
            for name, child in sorted(children.items()):
                yield from walk(child, [*path, name])
        else:
            yield " ".join(path), command

    yield from walk(_command(), [])


COMMANDS = dict(commands())


def parameters(name: str) -> list[str]:
    """The parameter names of a command, plus the global ``--html`` as ``html``."""
    return [param.name for param in COMMANDS[name].params] + ["html"]


def kind_of(command: str, param: str) -> str | None:
    if param == "html":
        return "output"
    return KINDS.get(command, {}).get(param)


def cases() -> list[tuple[str, str]]:
    out = []
    for command in COMMANDS:
        for param in parameters(command):
            if param not in NO_BAD_VALUE["*"] and param not in NO_BAD_VALUE.get(command, {}):
                out.append((command, param))
    return out


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Input files for the bases and the hostile paths of :data:`BAD` (placeholders -> paths)."""
    from fabricsim.io.chakra import encode_chakra
    from fabricsim.workload.chakra import ChakraNode, ChakraRank, NodeType

    root = tmp_path_factory.mktemp("exit2")
    (root / "out").mkdir()
    (root / "in").mkdir()
    (root / "a-folder").mkdir()
    latin1 = root / "in" / "latin1.yaml"
    latin1.write_bytes(b"name: caf\xe9\nkind: \xff\xfe\n")
    log = Path(__file__).parents[1] / "calibration" / "data" / "a3mega-16xh100-all_reduce.log"
    ets = []
    for rank in range(2):
        nodes = (
            ChakraNode(1, "fwd", NodeType.COMP, (), (), 100 + 50 * rank),
            ChakraNode(2, "ar", NodeType.COMM_COLL, (1,), (), 40, {"comm_type": 0, "comm_size": 1024}),
        )
        ets.append(root / "in" / f"t.{rank}.et")
        ets[-1].write_bytes(encode_chakra(ChakraRank(rank, nodes)))
    (root / "in" / "result.json").write_text(json.dumps({"op": "all-reduce", "gpus": 8, "size_bytes": 1024,
                                                          "time_s": 1e-5, "busbw_GBps": 1.0, "algbw_GBps": 1.0}))
    (root / "in" / "spec.yaml").write_text(
        "tasks:\n  - kind: collective\n    grid: {op: [all-reduce], system: [dgx-h100], gpus: [8], size: [1MiB]}\n")
    (root / "in" / "cluster.yaml").write_text(
        "fabric: leaf-spine:leaves=2,spines=2,hosts_per_leaf=8\njobs:\n"
        "  - name: train\n    command: train --model llama3-8b --system dgx-h100 --gpus 8 --tp 8 --global-batch 8"
        " --seq-len 1024\n  - name: noise\n    command: traffic permutation --size 1MiB --hosts 8\n")
    return {"{dir}": str(root / "a-folder"), "{missing}": str(root / "in" / "no-such-file.yaml"),
            "{latin1}": str(latin1), "{out}": str(root / "out"), "{log}": str(log), "{et0}": str(ets[0]),
            "{et1}": str(ets[1]), "{result}": str(root / "in" / "result.json"),
            "{spec}": str(root / "in" / "spec.yaml"), "{cluster}": str(root / "in" / "cluster.yaml"),
            "root": str(root)}


def _fill(value: str, arena: dict[str, str]) -> str:
    for key, path in arena.items():
        if key.startswith("{"):
            value = value.replace(key, path)
    return value


def argv_of(command: str, values: dict[str, object], arena: dict[str, str]) -> list[str]:
    """The words of ``fabricsim COMMAND`` with ``values`` (parameter name -> value) in place."""
    argv = command.split()
    for param in COMMANDS[command].params:
        if param.name not in values:
            continue
        value = values[param.name]
        if param.param_type_name == "argument":
            argv += [_fill(v, arena) for v in (value if isinstance(value, list) else [value])]
        elif value is True:
            argv.append(param.opts[-1])
        else:
            argv += [param.opts[-1], _fill(str(value), arena)]
    if "html" in values:
        argv += ["--html", _fill(str(values["html"]), arena)]
    return argv


def snapshot(root: str) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: relative path -> (size, mtime_ns)."""
    out = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            stat = os.lstat(path)
            out[os.path.relpath(path, root)] = (stat.st_size, stat.st_mtime_ns)
    return out


def _clear(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()


# ---------------------------------------------------------------------------------------------
def coverage_gaps(commands: dict[str, object]) -> list[str]:
    """What the tables lack for ``commands`` (name -> click command): bases, kinds, stale entries."""
    gaps = [f"{name}: no base invocation in BASES" for name in sorted(set(commands) - set(BASES))]
    gaps += [f"{name}: in BASES but not a command" for name in sorted(set(BASES) - set(commands))]
    for name, command in sorted(commands.items()):
        params = [param.name for param in command.params] + ["html"]  # type: ignore[attr-defined]
        exempt = {**NO_BAD_VALUE["*"], **NO_BAD_VALUE.get(name, {})}
        gaps += [f"{name}: {p} has no kind in KINDS" for p in params if p not in exempt and kind_of(name, p) is None]
        gaps += [f"{name}: KINDS names {p}, not a parameter" for p in KINDS.get(name, {}) if p not in params]
        gaps += [f"{name}: kind {k} is not in BAD" for k in KINDS.get(name, {}).values() if k not in BAD]
    return gaps


def test_every_command_and_option_has_a_table_entry() -> None:
    """A command or option registered without a base / a kind fails here, so coverage cannot lapse."""
    assert len(COMMANDS) >= 17, sorted(COMMANDS)
    assert coverage_gaps(COMMANDS) == []


def test_the_guard_sees_a_new_command_and_a_new_option() -> None:
    """The check above can fail: a command registered without a table entry, or an option without a kind."""
    import typer

    extra = typer.Typer(add_completion=False)

    @extra.command()
    def fresh(gpus: int = typer.Option(1, "--gpus"), turbo: str = typer.Option("x", "--turbo")) -> None:
        """A command nobody added to the tables."""

    command = typer.main.get_command(extra)
    assert coverage_gaps({**COMMANDS, "fresh": command}) == [
        "fresh: no base invocation in BASES", "fresh: gpus has no kind in KINDS", "fresh: turbo has no kind in KINDS"]
    renamed = dict(COMMANDS)
    renamed["cost"] = command
    assert "cost: turbo has no kind in KINDS" in coverage_gaps(renamed)


@pytest.mark.parametrize("command", sorted(BASES))
def test_base_is_valid(command: str, arena: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Each base exits 0 and writes its outputs, so every refusal below is the bad value's doing."""
    if command == "measure collective" and importlib.util.find_spec("torch") is None:
        pytest.skip("measure needs torch (the optional 'measure' extra); its refusals do not")
    out = Path(arena["{out}"])
    _clear(out)
    base = dict(BASES[command])
    if command not in HTML_FREE:
        base["html"] = "{out}/page.html"
    rc = main(argv_of(command, base, arena))
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    asked = {os.path.basename(_fill(str(v), arena)) for v in base.values() if str(v).startswith("{out}/")}
    assert asked <= set(os.listdir(out)), (asked, os.listdir(out))
    _clear(out)


@pytest.mark.parametrize(("command", "param"), cases(), ids=[f"{c}:{p}" for c, p in cases()])
def test_bad_value_exits_2_with_one_line(command: str, param: str, arena: dict[str, str],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    kind = kind_of(command, param)
    assert command in BASES, f"{command}: no base invocation in BASES (add one with a kind per option)"
    assert kind is not None, f"{command}: {param} has no kind in KINDS (or a reason in NO_BAD_VALUE)"
    _clear(Path(arena["{out}"]))
    before = snapshot(arena["root"])
    names = {param, param.replace("_", "-"), param.removesuffix("s"), *FIELD_WORDS.get((command, param), ())}
    failures = []
    for bad in BAD[kind]:
        values = {k: v for k, v in BASES[command].items() if k not in DROP_WITH.get((command, param), ())}
        if command not in HTML_FREE:
            values["html"] = "{out}/page.html"
        if command == "traffic" and param in NEEDS_PACKET:
            values["fidelity"] = "packet"
        if command == "collective" and param in COLLECTIVE_NETWORK:
            values["fidelity"] = "packet"
        if command in ("train", "infer", "serve") and param in FABRIC_PACKET:
            values["fidelity"] = "packet"
        values[param] = [bad] if isinstance(values.get(param), list) else bad
        argv = argv_of(command, values, arena)
        rc = main(argv)
        captured = capsys.readouterr()
        lines = captured.err.splitlines()
        problems = []
        if rc != 2:
            problems.append(f"exit {rc}")
        if captured.out:
            problems.append(f"stdout {captured.out[:80]!r}")
        if "Traceback" in captured.err:
            problems.append("traceback")
        if len(lines) != 1 or not lines[0].startswith("error: ") or not lines[0][7:].strip():
            problems.append(f"stderr {captured.err[-300:]!r}")
        elif not any(word in lines[0] for word in names):
            problems.append(f"the error does not name {param}: {lines[0][:200]!r}")
        after = snapshot(arena["root"])
        if after != before:
            problems.append(f"files changed: {sorted(set(after.items()) ^ set(before.items()))}")
            _clear(Path(arena["{out}"]))
        if problems:
            failures.append(f"{bad!r}: {'; '.join(problems)}")
    assert not failures, f"{command} {param} ({kind}):\n" + "\n".join(failures)


@pytest.mark.parametrize("argv", [[], ["train"], ["plan"], ["catalog"]])
def test_a_bare_command_prints_its_help_and_exits_0(argv, capsys):
    """Nothing but a command name asks for its help, as --help does: help on stdout, exit 0, no error line."""
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "Usage" in captured.out and captured.err == ""
