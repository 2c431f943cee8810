"""The fuzz driver's own command line (benchmarks/fuzz_cli.py): ``--help`` and a bad count are
argparse's usage and exit statuses, not a traceback (issue 27: ``--help`` was read as EXAMPLES)."""

import importlib.util
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_cli.py"


def _driver():
    spec = importlib.util.spec_from_file_location("fuzz_cli_driver", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_help_and_bad_counts_are_usage_not_tracebacks(capsys) -> None:
    driver = _driver()
    with pytest.raises(SystemExit) as done:
        driver._arguments(["--help"])
    assert done.value.code == 0 and "--workers" in capsys.readouterr().out
    for bad in (["x"], ["0"], ["10", "--workers", "-1"]):
        with pytest.raises(SystemExit) as done:
            driver._arguments(bad)
        assert done.value.code == 2
    args = driver._arguments(["300", "--workers", "1"])
    assert (args.examples, args.workers) == (300, 1)
    assert driver._arguments([]).examples == 3000
