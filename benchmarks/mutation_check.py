"""Mutation check: which named constants of the models does the suite guard?

Each mutation perturbs ONE constant in a scratch copy of ``src/`` (a float x1.25, an int x2, every
number of a tuple x1.25; a YAML group: every number under one key of a model data file x1.25) and
runs the tests that guard its package against that copy; a mutation that leaves every test passing
*survives*: the suite would not notice that constant being wrong. The targets are discovered, not
listed, so new or renamed constants are checked without editing this file:

* Python: module-level ``UPPER_CASE = <number | tuple of numbers>`` in the files of
  ``PYTHON_TARGETS`` (the compute and collective models, all of ``engine/`` including inference,
  ``reliability/``, ``cost/``), and for the packet model's parameters (``network/packet/params.py``)
  every non-zero numeric default of its dataclasses too (a zero default is a feature switched off).
  Names starting with ``_`` are unit conversions and are skipped, and so are the caps and
  resolutions listed in ``NOT_MODEL`` with why;
* YAML: each top-level group holding numbers in the files of ``YAML_FILES`` (transcribed tables
  such as NCCL's tuning constants are perturbed as a group: per-generation cells that no catalog
  system uses cannot be observed by any test, and are facts copied from a source, not assumptions),
  each device's ``kernels`` block (the kernel microbenchmarks the compute model is calibrated on),
  and the cost catalog's facility and load assumptions one by one (its prices are left alone: user-
  overridable estimates whose sources give ranges wider than the factor).

Each target names the tests that guard it (``MODEL_TESTS`` for the compute and collective models,
``tests/<package>`` for the others), so a mutation's run stays short.

Run: ``python benchmarks/mutation_check.py [--only NAME ...] [--list] [--workers N]`` (about 5-60 s
per mutation on two cores). Prints one line per mutation and the survivors; exit status 1 if any.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
# The tests that guard the compute and collective models (and the training engine built on them).
MODEL_TESTS = ("tests/transformer", "tests/collectives", "tests/engine", "tests/validation", "tests/properties",
               "tests/planner", "tests/workload")
# (Python file pattern under src/, the tests that guard it, whether dataclass field defaults are
# constants too). Each package gets the tests directory that guards it, so a mutation's run stays short.
PYTHON_TARGETS = (
    ("fabricsim/transformer/*.py", MODEL_TESTS, False),
    ("fabricsim/collectives/*.py", MODEL_TESTS, False),
    ("fabricsim/engine/training/*.py", MODEL_TESTS, False),
    ("fabricsim/engine/*.py", ("tests/engine",), False),
    ("fabricsim/engine/inference/*.py", ("tests/engine",), False),
    # PacketParams' defaults are the packet model's constants (DCQCN, PFC, ECN, HPCC).
    ("fabricsim/network/packet/params.py", ("tests/network/packet",), True),
    ("fabricsim/reliability/*.py", ("tests/reliability",), False),
    ("fabricsim/cost/*.py", ("tests/cost",), False),
)
# (file pattern, top-level keys to perturb (None = every group holding numbers), keys whose entries
# are perturbed one by one instead of as a group, the tests that guard the file)
YAML_FILES = (
    ("fabricsim/collectives/data/*.yaml", None, (), MODEL_TESTS),
    ("fabricsim/catalog/data/devices/*.yaml", ("kernels",), (), MODEL_TESTS),
    # facility PUEs and load fractions are single assumptions each; the other groups are
    # per-component power figures and prices transcribed from data sheets, perturbed as a group.
    ("fabricsim/catalog/data/cost/components.yaml", None, ("facility", "load"), ("tests/cost",)),
)
FACTOR = 1.25
# Numbers left out, with why: caps and switches (a wrong value changes no prediction), and catalog
# figures whose perturbation lies within what their source allows.
NOT_MODEL = {
    "engine.training.simulate.MAX_UNFOLDED_REPLICAS": "a cap on simulation size: replicas beyond it are folded",
    "engine.variability.MAX_LINK_DRAWS": "a cap on the links drawn for the slowest one of a collective",
    "network.packet.params.PacketParams.clamp_target_after_timer": "an on/off switch (> 0 is on), not a magnitude",
    "engine.inference.analytic.DECODE_SAMPLES": "quadrature points of the TPOT mean: 33, 66 and 4,000 give the same "
                                                "TPOT to 9 digits (linear in the context between roofline kinks)",
    "engine.inference.simulate.DECODE_STEPS": "sample size of the simulated decode (steps per run for P99); without "
                                              "variability the figures do not depend on it",
    "engine.inference.simulate.LAYER_GROUPS": "granularity of a simulated stage pass; without variability the pass "
                                              "time does not depend on it",
    # Cost-catalog figures whose x1.25 no honest test can call wrong (checked: each survived tests/cost):
    "components:load.gpu_idle_fraction": "x1.25 is 0.125 x TDP = 87.5 W on a 700 W GPU, inside its source's 60-90 W "
                                         "idle range",
    "components:nics": "adapter watts only move between the host and NIC groups under the server's fixed nameplate "
                       "(node_max_W); per-adapter figures are unverified estimates, no datasheet to test against",
    "components:cables": "only AEC draws power, and no catalogued fabric's media policy uses AEC cables",
}


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to src/
    apply: object  # callable(text) -> mutated text
    tests: tuple[str, ...] = MODEL_TESTS


def _number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _offset(lines: list[str], lineno: int, col_bytes: int) -> int:
    """Character offset in the file of (1-based line, UTF-8 byte column), as ``ast`` reports them."""
    return sum(len(line) for line in lines[: lineno - 1]) + len(lines[lineno - 1].encode()[:col_bytes].decode())


def _numeric_expression(node: ast.expr) -> bool:
    """A number, or arithmetic on numbers and names (``5.0 * _MBPS``): a dataclass default worth perturbing."""
    if _number(node):
        return True
    if isinstance(node, ast.BinOp):
        return all(_numeric_expression(x) or isinstance(x, ast.Name) for x in (node.left, node.right)) and (
            _numeric_expression(node.left) or _numeric_expression(node.right))
    return False


def _replacement(text: str, value: ast.expr) -> str | None:
    """The mutated source of a constant's value, or None when it is not a number (or tuple of them)."""
    segment = ast.get_source_segment(text, value)
    if _number(value):
        return f"({segment}) * 2" if isinstance(ast.literal_eval(value), int) else f"({segment}) * {FACTOR}"
    if isinstance(value, ast.Tuple) and value.elts and all(_number(e) for e in value.elts):
        return f"tuple(x * {FACTOR} for x in {segment})"
    return None


def _assignments(body: list[ast.stmt]) -> list[tuple[str, ast.expr]]:
    out = []
    for node in body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and value is not None:
            out.append((target.id, value))
    return out


def _is_dataclass(node: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in node.decorator_list)


def _python_mutations() -> list[Mutation]:
    found = []
    for pattern, tests, defaults in PYTHON_TARGETS:
        for path in sorted(SRC.glob(pattern)):
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines(keepends=True)
            module = ".".join(path.relative_to(SRC / "fabricsim").with_suffix("").parts)
            tree = ast.parse(text)
            candidates = []  # (name, value node, mutated source)
            for name, value in _assignments(tree.body):
                if name.startswith("_") or not name.isupper():
                    continue
                new = _replacement(text, value)
                if new is not None:
                    candidates.append((f"{module}.{name}", value, new))
            if defaults:  # every numeric field default of the file's dataclasses
                for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and _is_dataclass(n)):
                    for name, value in _assignments(cls.body):
                        # a zero default is a feature switched off: scaling it changes nothing
                        if _numeric_expression(value) and not (_number(value) and ast.literal_eval(value) == 0):
                            new = _replacement(text, value) or f"({ast.get_source_segment(text, value)}) * {FACTOR}"
                            candidates.append((f"{module}.{cls.name}.{name}", value, new))
            for name, value, new in candidates:
                start, end = _offset(lines, value.lineno, value.col_offset), _offset(
                    lines, value.end_lineno, value.end_col_offset)

                def apply(source: str, start: int = start, end: int = end, new: str = new) -> str:
                    return source[:start] + new + source[end:]

                if name not in NOT_MODEL:
                    found.append(Mutation(name, str(path.relative_to(SRC)), apply, tests))
    return found


# YAML keys that are not perturbed: a source's text, and prices (user-overridable estimates, ``--prices``,
# whose sources give ranges wider than the factor: no test can tell a price x1.25 from the source).
SKIP_KEYS = ("source",)
SKIP_SUFFIXES = ("price_usd",)


def _skipped(key: object) -> bool:
    return key in SKIP_KEYS or (isinstance(key, str) and key.endswith(SKIP_SUFFIXES))


def _scale(node: object) -> object:
    if isinstance(node, bool):
        return node
    if isinstance(node, int):
        return node * 2
    if isinstance(node, float):
        return node * FACTOR
    if isinstance(node, list):
        return [_scale(x) for x in node]
    if isinstance(node, dict):
        return {k: (v if _skipped(k) else _scale(v)) for k, v in node.items()}
    return node


def _has_number(node: object) -> bool:
    if isinstance(node, bool):
        return False
    if isinstance(node, int | float):
        return node != 0
    if isinstance(node, list):
        return any(_has_number(x) for x in node)
    if isinstance(node, dict):
        return any(_has_number(v) for k, v in node.items() if not _skipped(k))
    return False


def _yaml_mutations() -> list[Mutation]:
    found = []
    for pattern, keys, one_by_one, tests in YAML_FILES:
        for path in sorted(SRC.glob(pattern)):
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
            for key, value in doc.items():
                if (keys is not None and key not in keys) or not _has_number(value):
                    continue
                entries = [e for e in value if _has_number(value[e])] if key in one_by_one else [None]
                for entry in entries:

                    def apply(source: str, key: str = key, entry: str | None = entry) -> str:
                        data = yaml.safe_load(source)
                        if entry is None:
                            data[key] = _scale(data[key])
                        else:
                            data[key][entry] = _scale(data[key][entry])
                        return yaml.safe_dump(data, sort_keys=False)

                    name = f"{path.stem}:{key}" if entry is None else f"{path.stem}:{key}.{entry}"
                    if name in NOT_MODEL:
                        continue
                    found.append(Mutation(name, str(path.relative_to(SRC)), apply, tests))
    return found


def mutations() -> list[Mutation]:
    return _python_mutations() + _yaml_mutations()


def run_tests(src: Path, tests: tuple[str, ...], workers: str) -> bool:
    """True when ``tests`` pass against the (mutated) source tree ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src), "HYPOTHESIS_PROFILE": "repro"}
    parallel = ["-n", workers] if workers != "0" else []
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", *parallel, "-p", "no:cacheprovider", *tests],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="mutation names (substring match)")
    parser.add_argument("--list", action="store_true", help="list the mutations (and the tests guarding each)")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers per run (0: none)")
    args = parser.parse_args()
    todo = [m for m in mutations() if not args.only or any(s in m.name for s in args.only)]
    if args.list:
        print("\n".join(f"{m.name:<56} {' '.join(m.tests)}" for m in todo))
        return 0
    survivors = []
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "src"
        shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for tests in dict.fromkeys(m.tests for m in todo):
            if not run_tests(copy, tests, args.workers):
                print(f"the unmutated suite fails ({' '.join(tests)}): fix it first", file=sys.stderr)
                return 2
        for m in todo:
            target = copy / m.path
            original = target.read_text(encoding="utf-8")
            target.write_text(m.apply(original), encoding="utf-8")
            started = time.perf_counter()
            killed = not run_tests(copy, m.tests, args.workers)
            target.write_text(original, encoding="utf-8")
            print(f"{'killed  ' if killed else 'SURVIVED'} {m.name:<56} {time.perf_counter() - started:5.1f} s",
                  flush=True)
            if not killed:
                survivors.append(m.name)
    print(f"{len(todo) - len(survivors)} of {len(todo)} mutations killed; survivors: {survivors or 'none'}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
