"""What a serving run produced, summarised (layer L5): per-request times
(:class:`ServingOutcome`, from :class:`fabricsim.engine.inference.scheduler.ServingSimulation`)
into latency percentiles, throughput and SLO attainment (:func:`summarize`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ServingOutcome:
    """Per-request times (s): arrival, first token, finish; lengths as requested; preemptions."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    output_len: np.ndarray
    preemptions: int
    steps: int
    events: int
    kv_pool: dict[str, float] | None = None  # KvPool.report() with a pool
    prefix_hits: int = 0
    prefill_tokens: int = 0
    decode_tokens: int = 0
    """Tokens decoded (after the prefill's first) by the sequences that finished decoding."""
    decode_steps: int = 0
    """Steps those sequences spent decoding (one sequence in one step counts one)."""



@dataclass(frozen=True, slots=True)
class Percentiles:
    p50: float
    p90: float
    p99: float

    def to_json(self) -> dict[str, float]:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99}


def percentiles(values: np.ndarray) -> Percentiles:
    """P50/P90/P99 (numpy's linear interpolation) of the finite ``values``; NaN when none."""
    finite = values[np.isfinite(values)]
    if not len(finite):
        return Percentiles(math.nan, math.nan, math.nan)
    p50, p90, p99 = np.percentile(finite, [50, 90, 99])
    return Percentiles(float(p50), float(p90), float(p99))


@dataclass(frozen=True, slots=True)
class ServingSummary:
    requests: int
    completed: int
    duration_s: float
    output_tokens_per_s: float
    requests_per_s: float
    ttft: Percentiles
    tpot: Percentiles
    e2e: Percentiles
    slo_attainment: float
    preemptions: int
    steps: int
    kv_pool: dict[str, float] | None = None
    prefix_hit_rate: float = 0.0
    prefill_tokens_computed: int = 0
    tokens_per_step: float = math.nan
    """Measured: tokens decoded per decode step per sequence (after the first token; NaN if none)."""


def summarize(outcome: ServingOutcome, slo_ttft_s: float, slo_tpot_s: float) -> ServingSummary:
    """Latency percentiles, throughput (output tokens / (last finish - first arrival)) and the
    fraction of requests meeting both SLOs (TTFT <= ``slo_ttft_s`` and TPOT <= ``slo_tpot_s``)."""
    ttft = outcome.first_token_s - outcome.arrival_s
    decode_tokens = np.maximum(outcome.output_len - 1, 1)
    tpot = np.where(outcome.output_len > 1, (outcome.finish_s - outcome.first_token_s) / decode_tokens, np.nan)
    e2e = outcome.finish_s - outcome.arrival_s
    done = np.isfinite(outcome.finish_s)
    duration = float(np.max(outcome.finish_s[done]) - np.min(outcome.arrival_s)) if done.any() else math.nan
    ok = (ttft <= slo_ttft_s) & ((tpot <= slo_tpot_s) | ~np.isfinite(tpot))
    return ServingSummary(
        requests=len(outcome.arrival_s),
        completed=int(done.sum()),
        duration_s=duration,
        output_tokens_per_s=float(outcome.output_len[done].sum() / duration) if duration > 0 else math.nan,
        requests_per_s=float(done.sum() / duration) if duration > 0 else math.nan,
        ttft=percentiles(ttft),
        tpot=percentiles(tpot),
        e2e=percentiles(e2e),
        slo_attainment=float(np.mean(ok & done)) if len(done) else math.nan,
        preemptions=outcome.preemptions,
        steps=outcome.steps,
        kv_pool=outcome.kv_pool,
        prefix_hit_rate=outcome.prefix_hits / len(outcome.arrival_s) if len(outcome.arrival_s) else 0.0,
        prefill_tokens_computed=outcome.prefill_tokens,
        tokens_per_step=outcome.decode_tokens / outcome.decode_steps if outcome.decode_steps else math.nan,
    )
