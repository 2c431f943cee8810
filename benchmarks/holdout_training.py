"""Leave-one-out check of the one fitted constant of the training model (not run in CI).

``GEMM_PEAK_FRACTION`` (:mod:`fabricsim.transformer.constants`) was fitted on the same rows that
``fabricsim validate training`` reports, so that suite's errors are in-sample. This script asks
how well the model predicts a row it was *not* fitted on: for each row, refit the fraction on
all the other rows (grid 0.60-0.90, step 0.005, minimising their mean |error|, ties to the
smaller value), predict the held-out row with it, and report the held-out errors. Two splits:

* leave one *entry* out (20 entries);
* leave one *configuration* out: entries computed from the same estimate (the README GPT-3 row's
  TFLOP/s and iteration time; each Korthikanti model's MFU and iteration time) go out together.

Also prints, per grid value, whether the suite's test bounds (tests/validation/test_training.py)
hold, and the grid value that minimises the mean |error| over all rows.
The refit replaces the module constant that :func:`fabricsim.transformer.compute.gemm_efficiency`
reads (each ``estimate_training`` builds a fresh context, so nothing stale is reused).
Run: ``python benchmarks/holdout_training.py`` (~20 s).
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import mean

from fabricsim import catalog
from fabricsim.transformer import compute, constants
from fabricsim.validation import training
from fabricsim.validation.base import ValidationEntry

GRID = tuple(round(0.60 + 0.005 * i, 3) for i in range(61))


def suite_at(fraction: float) -> list[ValidationEntry]:
    """The training suite's entries with ``GEMM_PEAK_FRACTION`` = ``fraction``."""
    saved = compute.GEMM_PEAK_FRACTION
    compute.GEMM_PEAK_FRACTION = fraction
    try:
        return list(training.run(catalog).entries)
    finally:
        compute.GEMM_PEAK_FRACTION = saved


def group_of(entry: ValidationEntry) -> str:
    """Entries computed from one estimate share a group (one configuration)."""
    if entry.id.startswith("korthikanti"):
        return "korthikanti-" + entry.id.split("-")[1]
    return entry.id


def within_bounds(entries: list[ValidationEntry]) -> bool:
    """The bounds of tests/validation/test_training.py."""
    table1 = [abs(e.error) for e in entries if e.id.startswith("megatron-sc21-t1")]
    ok = mean(table1) <= 0.05 and max(table1) <= 0.10
    for metric in ("mfu", "iteration_time"):
        rows = [abs(e.error) for e in entries if e.id.startswith("korthikanti") and e.metric == metric]
        ok = ok and mean(rows) <= 0.05
    return ok


def best_fraction(errors: dict[float, list[float]], keep: Callable[[int], bool]) -> float:
    """Grid value minimising the mean |error| of the kept rows (first, i.e. smallest, on ties)."""
    return min(GRID, key=lambda f: mean(abs(e) for i, e in enumerate(errors[f]) if keep(i)))


def holdout(errors: dict[float, list[float]], groups: list[str]) -> tuple[list[float], list[float]]:
    """(held-out |errors| per entry, fitted fraction per held-out group)."""
    held, fits = [0.0] * len(groups), []
    for group in dict.fromkeys(groups):
        fraction = best_fraction(errors, lambda i, g=group: groups[i] != g)
        fits.append(fraction)
        for i, g in enumerate(groups):
            if g == group:
                held[i] = abs(errors[fraction][i])
    return held, fits


def main() -> None:
    suites = {f: suite_at(f) for f in GRID}
    errors = {f: [e.error for e in entries] for f, entries in suites.items()}
    entries = suites[constants.GEMM_PEAK_FRACTION]
    in_sample = [abs(e.error) for e in entries]
    passing = [f for f in GRID if within_bounds(suites[f])]
    print(f"rows: {len(entries)} entries, {len(set(map(group_of, entries)))} configurations")
    print(
        f"in-sample at GEMM_PEAK_FRACTION={constants.GEMM_PEAK_FRACTION}: "
        f"mean |error| {mean(in_sample):.1%}, max {max(in_sample):.1%}"
    )
    full = best_fraction(errors, lambda i: True)
    print(f"fit on all rows (min mean |error|): {full} -> mean {mean(abs(e) for e in errors[full]):.1%}")
    print(f"grid values keeping the test bounds: {min(passing)}-{max(passing)} ({len(passing)} of {len(GRID)})")
    for label, groups in (
        ("leave one entry out", [e.id + "/" + e.metric for e in entries]),
        ("leave one configuration out", [group_of(e) for e in entries]),
    ):
        held, fits = holdout(errors, groups)
        worst = max(range(len(held)), key=held.__getitem__)
        print(
            f"{label}: held-out mean |error| {mean(held):.1%}, max {held[worst]:.1%} ({entries[worst].id} "
            f"{entries[worst].metric}); refitted fraction {min(fits)}-{max(fits)}"
        )


if __name__ == "__main__":
    main()
