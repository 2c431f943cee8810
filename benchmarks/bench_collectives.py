"""Benchmark: collective estimates per second on one core, and the CLI's start-up time.

Run: ``python benchmarks/bench_collectives.py``. Prints figures; not part of the test suite.
The estimate mix covers every op, sizes from 1 KiB to 16 GiB, groups inside a node, across nodes
and strided (data-parallel) on every catalog system, AUTO and forced algorithms. Groups are placed
once up front, as the training model does (place_group is cached).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import numpy as np

from fabricsim.catalog import load_system, names
from fabricsim.collectives import Algorithm, CollectiveOp, estimate, place_group, runnable
from fabricsim.errors import FabricsimError

SEED = 0
CALLS = 300_000
CLI_RUNS = 7


def workload(seed: int = SEED, count: int = 4096) -> list[tuple]:
    """``count`` (op, size, group, algorithm) tuples drawn from an explicit seed."""
    rng = np.random.default_rng(seed)
    groups = []
    for name in names("systems"):
        system = load_system(name)
        node = system.gpus_per_node
        for gpus, stride in ((node, 1), (2, 1), (node * 4, 1), (node * 64, 1), (16, node), (512, node)):
            try:
                groups.append(place_group(system, gpus, stride))
            except FabricsimError:  # a catalog system whose fabric holds fewer GPUs than this group
                continue
    ops = list(CollectiveOp)
    out = []
    for _ in range(count):
        group = groups[rng.integers(len(groups))]
        op = ops[rng.integers(len(ops))]
        options = [Algorithm.AUTO, Algorithm.AUTO, Algorithm.AUTO, *runnable(op, group)]
        algorithm = options[rng.integers(len(options))]
        size = int(2 ** rng.uniform(10, 34))
        out.append((op, size, group, algorithm))
    return out


def estimates_per_second(calls: int = CALLS) -> float:
    cases = workload()
    for case in cases:  # warm the per-(op, group, algorithm) candidate cache
        estimate(*case)
    n = len(cases)
    start = time.perf_counter()
    for i in range(calls):
        estimate(*cases[i % n])
    return calls / (time.perf_counter() - start)


def cli_startup_s(runs: int = CLI_RUNS) -> float:
    """Median wall time of ``fabricsim --help`` in a fresh interpreter."""
    command = [sys.executable, "-c", "import sys; from fabricsim.cli.app import main; sys.exit(main(['--help']))"]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, env={**os.environ, "COLUMNS": "100"})
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    rate = estimates_per_second()
    print(f"collective estimates: {rate:,.0f} per second on one core (target >= 100,000)")
    print(f"fabricsim --help start-up: {cli_startup_s() * 1e3:.0f} ms (median of {CLI_RUNS})")


if __name__ == "__main__":
    main()
