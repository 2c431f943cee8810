"""Start-up time of fabricsim, measured against ``python -c pass`` in the same run (issue 15).

Each command runs ``REPEATS`` times in a fresh interpreter; the minimum wall time and the minimum CPU
time (user + sys of the child: the fairer figure on a shared machine) are reported (the least
disturbed by other load on the machine), with the excess over ``python -c pass``.
Targets: ``import fabricsim.api`` < 0.3 s and ``fabricsim train ... --json`` < 0.5 s.
Also lists which heavy packages a plain analytic ``train`` imports (it must not import scipy or
the network simulator).

Run: ``python benchmarks/bench_startup.py [REPEATS]``.

Measured 2026-12-02 07:15 UTC (issue 27), 9 runs each, bytecode cached, on 2 cores shared with five
other sessions (load ~4.5, so walls are noisy; CPU min, s, excess over ``python -c pass`` in brackets):
before the CLI's fast path (commit 4351dda) ``fabricsim train ... --json`` 0.195 (0.185) with typer
imported; after it 0.179 (0.167) with no heavy module (the same command through typer, ``--seed 0``:
0.205 (0.193)); ``from fabricsim.api import train`` 0.197, ``fabricsim --version`` 0.067.
Run it with ``PYTHONDONTWRITEBYTECODE`` unset, or every run compiles fabricsim from source.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time

REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
TRAIN = [
    *("train", "--model", "gpt3-175b", "--system", "dgx-a100", "--gpus", "1024", "--global-batch", "1536"),
    *("--seq-len", "2048", "--tp", "8", "--pp", "16", "--json"),
]
CLI = [sys.executable, "-c", "import sys; from fabricsim.cli.app import main; sys.exit(main())"]
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import fabricsim.api": [sys.executable, "-c", "import fabricsim.api"],
    "from fabricsim.api import train": [sys.executable, "-c", "from fabricsim.api import train"],
    "import every api family": [sys.executable, "-c", "import fabricsim.api as a; [getattr(a, n) for n in a.__all__]"],
    "fabricsim --version": [*CLI, "--version"],
    "fabricsim train ... --json": [*CLI, *TRAIN],
    "  the same through typer (--seed 0)": [*CLI, *TRAIN, "--seed", "0"],
}
PROBE = (
    "import sys; from fabricsim.cli.app import main; main(sys.argv[1:]); "
    "print(*sorted(m for m in ('scipy', 'fabricsim.network', 'fabricsim.topology.routing', 'rich', 'numpy', 'typer') "
    "if m in sys.modules), file=sys.stderr)"
)


def best_of(argv: list[str]) -> tuple[float, float]:
    """(min wall s, min CPU s: user + sys of the child) of ``REPEATS`` runs of ``argv``."""
    walls, cpus = [], []
    for _ in range(REPEATS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return min(walls), min(cpus)


def main() -> None:
    results = {name: best_of(argv) for name, argv in COMMANDS.items()}
    base_wall, base_cpu = results["python -c pass"]
    print(f"best of {REPEATS} runs each (s); excess = time - python -c pass")
    print(f"  {'':36s} {'wall':>6s} {'excess':>7s}   {'CPU':>6s} {'excess':>7s}")
    for name, (wall, cpu) in results.items():
        print(f"  {name:36s} {wall:6.3f} {wall - base_wall:7.3f}   {cpu:6.3f} {cpu - base_cpu:7.3f}")
    heavy = subprocess.run([sys.executable, "-c", PROBE, *TRAIN], capture_output=True, text=True, check=True)
    print(f"  heavy modules a JSON train imports: {heavy.stderr.strip() or 'none'}")


if __name__ == "__main__":
    main()
