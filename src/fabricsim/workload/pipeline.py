"""Pipeline-parallel schedules: 1F1B and interleaved 1F1B (layer L5).

With ``p`` stages, ``m`` micro-batches per step and ``v`` virtual stages (model chunks) per GPU,
the 1F1B schedule idles each GPU for (p - 1) forward+backward stage times per step and the
interleaved schedule for (p - 1)/v of them (Narayanan et al. SC'21, sec. 2.2): bubble fraction
(p - 1)/(v·m). Memory: stage 0 holds the activations of min(p, m) micro-batches (1F1B), times
(1 + (p - 1)/(p·v)) under interleaving (Korthikanti et al. 2022, sec. 4.2.3).
"""

from __future__ import annotations


def bubble_stage_times(pipeline_parallel: int, virtual_stages: int) -> float:
    """Idle time per step, in units of one micro-batch's forward+backward time on one GPU:
    (p - 1)/v (the analytic engine's pipeline bubble; over m micro-batches of compute the bubble
    fraction is (p - 1)/(v·m))."""
    return (pipeline_parallel - 1) / virtual_stages


def in_flight_microbatches(pipeline_parallel: int, virtual_stages: int, microbatches: int) -> float:
    """Micro-batches whose activations stage 0 holds at its peak (in units of its own layers)."""
    in_flight = float(min(pipeline_parallel, microbatches))
    if virtual_stages > 1 and pipeline_parallel > 1:
        in_flight *= 1.0 + (pipeline_parallel - 1) / (pipeline_parallel * virtual_stages)
    return in_flight


def p2p_transfers_per_microbatch(pipeline_parallel: int, virtual_stages: int) -> int:
    """Blocking send/recv pairs on a GPU's critical path per micro-batch: one forward activation
    and one backward gradient per model chunk (Megatron-LM's 1F1B exchanges them synchronously)."""
    return 0 if pipeline_parallel == 1 else 2 * virtual_stages


def a2a_paired_share(pipeline_parallel: int, virtual_stages: int, microbatches: int) -> float:
    """Share of the first stage's forward and backward chunk steps that Megatron-Core's 1F1B A2A
    overlap (``--overlap-moe-expert-parallel-comm``) runs as combined forward + backward steps; the
    rest (warm-up forwards, cool-down backwards) run alone, their exchanges exposed.

    Megatron-Core ``schedules.get_pp_rank_microbatches`` at d98e8a6: interleaved, rank r of p runs
    W = 2(p - r - 1) + (v - 1)·p + 1 warm-up steps with the overlap (the + 1 keeps each combined pair
    independent; micro-batch groups of p), capped at m·v; the first stage (r = 0, the most warm-up)
    paces the step. Without pipelining one forward and one backward run alone: (m - 1)/m paired.
    Pipelining without interleaving has no combined schedule (the overlap asserts virtual stages
    when pp > 1): 0."""
    p, v, m = pipeline_parallel, virtual_stages, microbatches
    if p == 1:
        return (m - 1) / m
    if v == 1:
        return 0.0
    steps = m * v
    warmup = min(steps, 2 * (p - 1) + (v - 1) * p + 1)
    return (steps - warmup) / steps
