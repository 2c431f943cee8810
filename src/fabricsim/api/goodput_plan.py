"""Layout search ranked by goodput (public API, layer L9): ``plan train --objective goodput``.

The step-time search (:func:`fabricsim.api.planning.plan_train`) gives the fastest feasible layouts;
each is then scored by goodput = tokens/s × expected ETTR (Daly's closed form, no Monte-Carlo, so
the ranking is deterministic and cheap), where the layout enters through its checkpoint state
(ZeRO sharding, the shard each GPU writes) and its scale-out share of the step (what a rerouted
cable slows). Failure rates do not depend on the layout. A layout outside the step-time search's
wider top (``CANDIDATES_PER_PLAN`` × top) is not considered: goodput differs from tokens/s by a few
percent at most, far less than the spread of step times the search ranks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from fabricsim.api.goodput import expected_goodput, goodput_options, goodput_setup
from fabricsim.api.planning import plan_train
from fabricsim.errors import FabricsimError
from fabricsim.metrics import PlanEntry, PlanResult

CANDIDATES_PER_PLAN = 4


def plan_goodput(
    model: str,
    system: str,
    gpus: int,
    global_batch: int,
    seq_len: int,
    *,
    days: float,
    top: int = 5,
    constraints: dict[str, object] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> PlanResult:
    """The ``top`` layouts by goodput over ``days`` (``options``: :func:`fabricsim.api.goodput`'s
    checkpoint_interval, checkpoint_target, link_failures, failure_rates, pfs_bandwidth_Bps, seed)."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise FabricsimError("top", f"must be a positive integer, got {top!r}")
    parsed = goodput_options(days, **options, system=system)
    search = plan_train(
        model,
        system,
        gpus,
        global_batch,
        seq_len,
        top=max(CANDIDATES_PER_PLAN * top, 20),
        constraints=constraints,
        on_progress=on_progress,
    )
    if not search.plans:
        return dataclasses.replace(search, objective="goodput")
    setup = goodput_setup(system, gpus, parsed)
    scored = [(expected_goodput(entry.result, setup), entry) for entry in search.plans]
    scored.sort(key=lambda item: (-item[0][0], item[1].rank))
    best = scored[0][0][0]
    plans = tuple(_entry(rank, figures, entry, best) for rank, (figures, entry) in enumerate(scored[:top], 1))
    return dataclasses.replace(search, objective="goodput", plans=plans)


def _entry(rank: int, figures: tuple[float, float, float], entry: PlanEntry, best: float) -> PlanEntry:
    goodput_tokens_per_s, ettr, interval_s = figures
    extra = (
        ("goodput_tokens_per_s", goodput_tokens_per_s),
        ("ettr_expected", ettr),
        ("checkpoint_interval_s", interval_s),
        ("step_time_rank", entry.rank),
    )
    reasons = () if rank == 1 else (f"goodput {100 * (1 - goodput_tokens_per_s / best):.2f}% below plan 1",)
    return dataclasses.replace(entry, rank=rank, reasons=reasons, extra=entry.extra + extra)
