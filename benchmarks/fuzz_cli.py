"""The CLI fuzz test of tests/cli/test_fuzz_cli.py at scale (issue 15): many more cases per command.

Runs the same strategies and checks (exit 0 or 2, one stderr line on 2, no traceback, bounded
time, nothing written outside the output path) with ``EXAMPLES`` cases per command (default
10,000: ~57,000 cases) and prints the count and the rate.

Run: ``python benchmarks/fuzz_cli.py [EXAMPLES]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    env = {**os.environ, "FABRICSIM_FUZZ_EXAMPLES": str(examples)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    argv = [sys.executable, "-m", "pytest", "tests/cli/test_fuzz_cli.py", "-q", "-p", "no:cacheprovider", "-n", "2"]
    proc = subprocess.run(argv, cwd=ROOT, env=env, check=False)
    elapsed = time.perf_counter() - start
    cases = 3 * examples + 10 * max(10, examples // 6) + examples  # fast, search + catalog, raw argv
    print(f"fuzz: ~{cases:,} cases in {elapsed:.0f} s ({cases / elapsed:,.0f}/s), exit {proc.returncode}")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
