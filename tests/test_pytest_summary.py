"""``python -m pytest -q`` (the usual quiet run) ends with the ``N passed`` summary line (issue 27:
``-q`` in pyproject's addopts turned a user's ``-q`` into ``-qq``, which prints no summary)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quiet_run_prints_the_summary_line(tmp_path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path / "test_one.py")],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout.splitlines()[-1]
