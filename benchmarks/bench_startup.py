"""Start-up time of fabricsim, measured against ``python -c pass`` in the same run (issue 15).

Each command runs ``REPEATS`` times in a fresh interpreter; the minimum wall time is reported
(the least disturbed by other load on the machine), with the excess over ``python -c pass``.
Targets: ``import fabricsim.api`` < 0.3 s and ``fabricsim train ... --json`` < 0.5 s.
Also lists which heavy packages a plain analytic ``train`` imports (it must not import scipy or
the network simulator).

Run: ``python benchmarks/bench_startup.py [REPEATS]``.
"""

from __future__ import annotations

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


def best_of(argv: list[str]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    results = {name: best_of(argv) for name, argv in COMMANDS.items()}
    base = results["python -c pass"]
    print(f"best of {REPEATS} runs each (s); excess = time - python -c pass")
    for name, seconds in results.items():
        print(f"  {name:34s} {seconds:6.3f}   excess {seconds - base:6.3f}")
    heavy = subprocess.run([sys.executable, "-c", PROBE, *TRAIN], capture_output=True, text=True, check=True)
    print(f"  heavy modules a JSON train imports: {heavy.stderr.strip() or 'none'}")


if __name__ == "__main__":
    main()
