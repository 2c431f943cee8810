"""The README's accuracy table says what `fabricsim validate` prints (issue 10). The inference
suite (~20 s) is left to tests/validation/test_inference.py to keep CI fast."""

import re
from pathlib import Path

import pytest

from fabricsim import catalog
from fabricsim.validation import run_suite

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_rows() -> dict[str, tuple[int, float]]:
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `([\w-]+)`: .*\| (\d+) \| ([\d.]+)% \|", line)
        if match:
            rows[match.group(1)] = (int(match.group(2)), float(match.group(3)))
    return rows


@pytest.mark.parametrize("name", ["collectives", "kernels", "training", "training-h100", "training-public"])
def test_readme_accuracy_matches_validate(name) -> None:
    rows, mean_pct = _readme_rows()[name]
    result = run_suite(name, catalog)
    assert len(result.entries) == rows
    assert f"{result.mean_abs_error * 100:.1f}" == f"{mean_pct:.1f}"
    worst = f"{max(abs(e.error) for e in result.entries) * 100:.1f}%"
    assert worst in README.read_text(encoding="utf-8")
