"""The property tests of tests/properties/ at the ``long`` hypothesis profile (2,000 examples per
property instead of CI's 60; profiles in tests/conftest.py).

Run: ``python benchmarks/properties_long.py [PYTEST ARGS ...]`` (e.g. ``-k collective`` for one
file, ``-x`` to stop at the first failure; a failure prints its ``@reproduce_failure`` blob). Exit
status is pytest's. Takes tens of minutes on two cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    env = {**os.environ, "HYPOTHESIS_PROFILE": "long"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "pytest", "tests/properties", "-q", "-p", "no:cacheprovider", *sys.argv[1:]]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, check=False)
    print(f"properties (long profile): exit {proc.returncode} in {time.perf_counter() - start:.0f} s")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
