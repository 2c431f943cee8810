"""Simulation options of ``train`` / ``infer`` at other fidelities, typed at the edge (public API, layer L9)."""

from __future__ import annotations

from fabricsim.engine.variability import Variability
from fabricsim.errors import FabricsimError
from fabricsim.specs.inputs import Count, NonNegativeFloat, Seed, edge

DEFAULT_SEEDS = 20  # each run re-simulates the step (with DP replicas unfolded): keep the default cheap
Seeds = Count("SEEDS")


def _straggler(text: str | None) -> tuple[float, float]:
    if text is None:
        return 0.0, 0.0
    try:
        fraction, slowdown = (float(part) for part in text.split(":"))
    except ValueError:
        problem = f"expected FRACTION:SLOWDOWN, got {text!r}"
        raise FabricsimError("straggler", problem, "e.g. --straggler 0.01:0.2") from None
    return fraction, slowdown


@edge
def variability(
    straggler: str | None = None,
    jitter: NonNegativeFloat = 0.0,
    link_jitter: NonNegativeFloat = 0.0,
    ecmp_rehash: bool = False,
    seeds: Seeds | None = None,
    seed: Seed = 0,
) -> Variability | None:
    """The seeded variability of a simulated run, or None when nothing varies.

    ``straggler`` is ``FRACTION:SLOWDOWN`` (``0.01:0.2``: 1% of GPUs 20% slower); ``jitter`` and
    ``link_jitter`` are half-normal sigmas (fractions of the nominal time); ``seeds`` Monte-Carlo
    runs (default 20) from ``seed``. Ranges are checked by :meth:`Variability.validate`.
    """
    fraction, slowdown = _straggler(straggler)
    runs = seeds if seeds is not None else DEFAULT_SEEDS
    chosen = Variability(fraction, slowdown, jitter, link_jitter, ecmp_rehash, runs, seed)
    chosen.validate()
    return chosen if chosen.active else None
