"""Mutation check: which named constants of the compute and collective models does the suite guard?

Each mutation perturbs ONE constant in a scratch copy of ``src/`` (a float x1.25, an int x2, every
number of a tuple x1.25; a YAML group: every number under one top-level key of a model data file
x1.25) and runs the model's tests against that copy; a mutation that leaves every test passing
*survives*: the suite would not notice that constant being wrong. The targets are discovered, not
listed, so new or renamed constants are checked without editing this file:

* Python: module-level ``UPPER_CASE = <number | tuple of numbers>`` in the packages of
  ``PYTHON_PACKAGES`` (names starting with ``_`` are unit conversions and are skipped, and so are
  the caps listed in ``NOT_MODEL``);
* YAML: each top-level group holding numbers in the files of ``YAML_FILES`` (transcribed tables
  such as NCCL's tuning constants are perturbed as a group: per-generation cells that no catalog
  system uses cannot be observed by any test, and are facts copied from a source, not assumptions),
  and each device's ``kernels`` block (the kernel microbenchmarks the compute model is calibrated on).

Run: ``python benchmarks/mutation_check.py [--only NAME ...] [--list]`` (about 10-20 s per
mutation on two cores). Prints one line per mutation and the survivors; exit status 1 if any.
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
PYTHON_PACKAGES = ("fabricsim/transformer", "fabricsim/collectives", "fabricsim/engine/training")
# (file pattern, top-level keys to perturb; None = every group holding numbers)
YAML_FILES = (("fabricsim/collectives/data/*.yaml", None), ("fabricsim/catalog/data/devices/*.yaml", ("kernels",)))
TESTS = ("tests/transformer", "tests/collectives", "tests/engine", "tests/validation", "tests/properties",
         "tests/planner", "tests/workload")
FACTOR = 1.25
# Upper-case numbers that are not model constants, with why (a wrong value changes no prediction).
NOT_MODEL = {"simulate.MAX_UNFOLDED_REPLICAS": "a cap on simulation size: replicas beyond it are folded"}


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # relative to src/
    apply: object  # callable(text) -> mutated text


def _number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _offset(lines: list[str], lineno: int, col_bytes: int) -> int:
    """Character offset in the file of (1-based line, UTF-8 byte column), as ``ast`` reports them."""
    return sum(len(line) for line in lines[: lineno - 1]) + len(lines[lineno - 1].encode()[:col_bytes].decode())


def _python_mutations() -> list[Mutation]:
    found = []
    for package in PYTHON_PACKAGES:
        for path in sorted((SRC / package).glob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines(keepends=True)
            for node in ast.parse(text).body:
                target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
                    node.target if isinstance(node, ast.AnnAssign) else None)
                value = getattr(node, "value", None)
                if not isinstance(target, ast.Name) or value is None:
                    continue
                name = target.id
                if name.startswith("_") or not name.isupper():
                    continue
                if _number(value):
                    is_int = isinstance(ast.literal_eval(value), int)
                    new = f"({ast.get_source_segment(text, value)}) * 2" if is_int else \
                        f"({ast.get_source_segment(text, value)}) * {FACTOR}"
                elif isinstance(value, ast.Tuple) and value.elts and all(_number(e) for e in value.elts):
                    new = f"tuple(x * {FACTOR} for x in {ast.get_source_segment(text, value)})"
                else:
                    continue
                start, end = _offset(lines, value.lineno, value.col_offset), _offset(
                    lines, value.end_lineno, value.end_col_offset)

                def apply(source: str, start: int = start, end: int = end, new: str = new) -> str:
                    return source[:start] + new + source[end:]

                if f"{path.stem}.{name}" not in NOT_MODEL:
                    found.append(Mutation(f"{path.stem}.{name}", str(path.relative_to(SRC)), apply))
    return found


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
        return {k: (v if k == "source" else _scale(v)) for k, v in node.items()}
    return node


def _has_number(node: object) -> bool:
    if isinstance(node, bool):
        return False
    if isinstance(node, int | float):
        return node != 0
    if isinstance(node, list):
        return any(_has_number(x) for x in node)
    if isinstance(node, dict):
        return any(_has_number(v) for k, v in node.items() if k != "source")
    return False


def _yaml_mutations() -> list[Mutation]:
    found = []
    for pattern, keys in YAML_FILES:
        for path in sorted(SRC.glob(pattern)):
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
            for key, value in doc.items():
                if (keys is not None and key not in keys) or not _has_number(value):
                    continue

                def apply(source: str, key: str = key) -> str:
                    data = yaml.safe_load(source)
                    data[key] = _scale(data[key])
                    return yaml.safe_dump(data, sort_keys=False)

                found.append(Mutation(f"{path.stem}:{key}", str(path.relative_to(SRC)), apply))
    return found


def mutations() -> list[Mutation]:
    return _python_mutations() + _yaml_mutations()


def run_tests(src: Path) -> bool:
    """True when the model's tests pass against the (mutated) source tree ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src), "HYPOTHESIS_PROFILE": "repro"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-n", "2", "-p", "no:cacheprovider", *TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="mutation names (substring match)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = parser.parse_args()
    todo = [m for m in mutations() if not args.only or any(s in m.name for s in args.only)]
    if args.list:
        print("\n".join(m.name for m in todo))
        return 0
    survivors = []
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "src"
        shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        if not run_tests(copy):
            print("the unmutated suite fails: fix it first", file=sys.stderr)
            return 2
        for m in todo:
            target = copy / m.path
            original = target.read_text(encoding="utf-8")
            target.write_text(m.apply(original), encoding="utf-8")
            started = time.perf_counter()
            killed = not run_tests(copy)
            target.write_text(original, encoding="utf-8")
            print(f"{'killed  ' if killed else 'SURVIVED'} {m.name:<48} {time.perf_counter() - started:5.1f} s",
                  flush=True)
            if not killed:
                survivors.append(m.name)
    print(f"{len(todo) - len(survivors)} of {len(todo)} mutations killed; survivors: {survivors or 'none'}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
