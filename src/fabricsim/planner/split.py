"""Prefill/decode split of a serving deployment: aggregated or P:D disaggregated (layer L8).

For each candidate inference layout with at least two replicas, the request stream is served by
the request-level serving simulation (:func:`fabricsim.engine.inference.serving.simulate_serving`:
continuous batching, chunked prefill, KV transfer from prefill to decode replicas) once with every
replica doing both phases and once per split of the replicas into P prefill and D decode replicas
(every P from 1 to replicas - 1; above :data:`MAX_SPLITS` splits, that many evenly spread ones).
Ranked by SLO attainment (share of requests meeting both the TTFT and TPOT SLOs), then output
tokens/s, then the canonical layout key and P. Cost: one simulation per (layout, split), tens of
milliseconds for a thousand requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.engine.inference.scheduler import ServingSummary
from fabricsim.engine.inference.serving import ServeScenario, replica_kv_tokens, simulate_serving
from fabricsim.engine.inference.step import InferenceLayout
from fabricsim.planner.infer import layout_key
from fabricsim.specs import ModelSpec, SystemSpec
from fabricsim.workload.requests import RequestStream

MAX_SPLITS = 15
DEFAULT_SLO_S = (2.0, 0.1)
"""(TTFT, TPOT) SLOs in seconds when none is given: the defaults of ``fabricsim serve``."""


@dataclass(frozen=True, slots=True)
class SplitQuestion:
    """Model, system, the request stream and the SLOs (TTFT, TPOT) in seconds."""

    model: ModelSpec
    system: SystemSpec
    stream: RequestStream
    slo_s: tuple[float, float]


@dataclass(frozen=True, slots=True)
class SplitPlan:
    """One deployment: a layout, its prefill:decode replica split (None: aggregated), its outcome."""

    layout: InferenceLayout
    disaggregate: tuple[int, int] | None
    summary: ServingSummary


def split_options(replicas: int) -> list[tuple[int, int] | None]:
    """None (aggregated) and the (prefill, decode) replica splits to try, ascending prefill."""
    if replicas < 2:
        return [None]
    prefills = list(range(1, replicas))
    if len(prefills) > MAX_SPLITS:
        prefills = sorted(
            {max(1, min(replicas - 1, round(replicas * i / (MAX_SPLITS + 1)))) for i in range(1, MAX_SPLITS + 1)}
        )
    return [None, *((p, replicas - p) for p in prefills)]


def _rank_key(plan: SplitPlan) -> tuple:
    split = plan.disaggregate or (0, 0)
    return (-plan.summary.slo_attainment, -plan.summary.output_tokens_per_s, layout_key(plan.layout), split)


def search_splits(question: SplitQuestion, layouts: list[InferenceLayout]) -> tuple[tuple[SplitPlan, ...], int]:
    """(every simulated deployment ranked best first, layouts skipped because a replica's KV cache
    cannot hold the longest request)."""
    longest = int((question.stream.input_len + question.stream.output_len).max())
    plans, skipped = [], 0
    for layout in layouts:
        if replica_kv_tokens(ServeScenario(question.model, question.system, layout)) < longest:
            skipped += 1
            continue
        for split in split_options(layout.replicas):
            scenario = ServeScenario(question.model, question.system, layout, disaggregate=split)
            plans.append(SplitPlan(layout, split, simulate_serving(scenario, question.stream, question.slo_s)))
    return tuple(sorted(plans, key=_rank_key)), skipped
