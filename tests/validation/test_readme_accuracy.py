"""The README's accuracy table says what `fabricsim validate` prints (issue 10), row by row: each
suite's row count, mean |error| and worst error (signed, as `validate` prints it) are compared with
the figures the suite computes now, for every suite `validate` has (inference included)."""

import re
from pathlib import Path

import pytest

from fabricsim import catalog
from fabricsim.validation import SUITES, run_suite

README = Path(__file__).resolve().parents[2] / "README.md"
HEADER = "| suite (`fabricsim validate SUITE`) |"


def _cells(line: str) -> list[str]:
    """A Markdown table row's cells (an escaped ``\\|`` stays inside its cell)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def readme_table(text: str) -> dict[str, dict[str, str]]:
    """{suite: {"rows", "mean", "worst"}} from the accuracy table (the rows under HEADER)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADER))
    header = _cells(lines[start])
    assert header[1:] == ["rows", "mean \\|error\\|", "worst"], header
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        suite = re.match(r"`([\w-]+)`", cells[0])
        assert suite is not None and len(cells) == 4, line
        table[suite.group(1)] = {"rows": cells[1], "mean": cells[2], "worst": cells[3]}
    return table


def test_the_table_parser_reads_each_row_and_escaped_bars():
    text = f"intro\n\n{HEADER} rows | mean \\|error\\| | worst |\n|---|---|---|---|\n" \
           "| `a`: x \\| y | 3 | 1.0% | -2.5% (row 7) |\n| `b`: z | 4 | 2.0% | +9.9% |\n\nafter | not a row |\n"
    assert readme_table(text) == {"a": {"rows": "3", "mean": "1.0%", "worst": "-2.5% (row 7)"},
                                  "b": {"rows": "4", "mean": "2.0%", "worst": "+9.9%"}}


def test_the_table_has_one_row_per_suite():
    assert sorted(readme_table(README.read_text(encoding="utf-8"))) == sorted(SUITES)


@pytest.mark.parametrize("name", sorted(SUITES))
def test_readme_accuracy_row_matches_validate(name) -> None:
    row = readme_table(README.read_text(encoding="utf-8"))[name]
    result = run_suite(name, catalog)
    errors = [e.error for e in result.entries]
    assert int(row["rows"]) == len(errors)
    assert row["mean"] == f"{result.mean_abs_error * 100:.1f}%"
    worst = max(errors, key=abs)
    stated = re.match(r"([+-]\d+\.\d)%", row["worst"])
    assert stated is not None, row["worst"]
    assert stated.group(1) == f"{worst * 100:+.1f}"
