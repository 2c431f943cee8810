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
