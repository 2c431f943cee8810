"""A shared CXL pool for preempted KV: transfer times under contention, capacity, hits, and the
scheduler's bookkeeping when requests resume from the pool instead of recomputing."""

import math

import numpy as np
import pytest

from fabricsim.engine.inference.kv_pool import KvPool, PoolConfig
from fabricsim.engine.inference.scheduler import ClusterConfig, SchedulerConfig, ServingSimulation, summarize
from fabricsim.workload.requests import LengthDist, poisson_stream

GB = 1e9


def config(**changes):
    """A pool of 60 GB/s behind 64 GB/s ports, 1 us latency, 1 kB per token on each of 2 GPUs."""
    base = {"capacity_bytes": 1e12, "port_bandwidth_Bps": 64 * GB, "shared_bandwidth_Bps": 60 * GB,
            "latency_s": 1e-6, "contention": 1.0, "bytes_per_token_per_gpu": 1000.0, "transfer_gpus": 2}
    return PoolConfig(**{**base, **changes})


def test_one_transfer_alone_gets_the_pool_up_to_a_port():
    # 2 GPUs share 60 GB/s: 30 GB/s each, below the 64 GB/s port; 1e6 tokens x 1 kB per GPU
    pool = KvPool(config())
    assert pool.evict(7, 1_000_000, 0.0) == pytest.approx(1e-6 + 1e9 / 30e9)
    # one GPU alone is held to its port: min(64, 60/1) = 60 GB/s
    alone = KvPool(config(transfer_gpus=1, shared_bandwidth_Bps=100 * GB))
    assert alone.evict(7, 1_000_000, 0.0) == pytest.approx(1e-6 + 1e9 / 64e9)


def test_overlapping_transfers_and_declared_sharers_split_the_bandwidth():
    pool = KvPool(config())
    first = pool.evict(1, 1_000_000, 0.0)
    second = pool.evict(2, 1_000_000, 0.0)  # starts while the first runs: 4 GPUs share 60 GB/s
    assert second == pytest.approx(1e-6 + 1e9 / 15e9)
    later = pool.evict(3, 1_000_000, first + second + 1.0)  # both done: alone again
    assert later == pytest.approx(first)
    # twice the sharers declared (the others as busy as this deployment): half the share
    assert KvPool(config(contention=2.0)).evict(1, 1_000_000, 0.0) == pytest.approx(1e-6 + 1e9 / 15e9)


def test_a_full_pool_refuses_and_the_refusal_is_a_miss_at_readmission():
    pool = KvPool(config(capacity_bytes=3e6))  # room for 1,500 tokens of 2 kB
    assert pool.evict(1, 1000, 0.0) is not None
    assert pool.evict(2, 1000, 0.0) is None  # 4 MB would not fit
    assert pool.readmit(3, 1.0) is None  # never preempted: not a re-admission
    assert pool.readmit(2, 1.0) is None
    tokens, seconds = pool.readmit(1, 1.0)
    assert tokens == 1000 and seconds > 0
    report = pool.report()
    assert (report["readmissions"], report["hit_rate"]) == (2, 0.5)
    assert report["bytes_moved"] == 2 * 2e6  # written and read back
    assert pool.used_bytes == 0.0 and math.isclose(report["stall_s"], 2 * seconds)


def timer(work):
    """The scheduler tests' toy step: 5 ms + 20 us per token + 1 ns per KV token read."""
    return 5e-3 + 20e-6 * work.tokens + 1e-9 * work.kv_tokens_read


class Recorder:
    def __init__(self):
        self.works = []

    def __call__(self, work):
        self.works.append(work)
        return timer(work)


def simulate(pool, kv=3000, lengths=(200, 50), budget=2048, **extra):
    """400 requests of ``lengths`` (prompt, output) tokens at 1000/s on replicas of ``kv`` KV
    slots: they preempt."""
    record = Recorder()
    dists = (LengthDist("fixed", lengths[0]), LengthDist("fixed", lengths[1]))
    stream = poisson_stream(1000.0, 400, dists, (10**6, 10**6), 3)
    cfg = ClusterConfig(SchedulerConfig(kv, token_budget=budget), record, kv_pool=pool, **extra)
    sim = ServingSimulation(stream, cfg)
    return sim, sim.run(), record.works


DISAGGREGATED = {"mixed": 0, "prefill": 1, "decode": 1, "transfer_s": lambda tokens: 1e-4}
CHUNKED = {"lengths": (600, 300), "budget": 256}  # prompts over several steps: some preempted part-way


@pytest.mark.parametrize("extra", [{}, {"mixed": 2}, DISAGGREGATED, CHUNKED])
def test_preempted_requests_resume_from_the_pool_and_every_slot_is_given_back(extra):
    sim, outcome, works = simulate(config(), **extra)
    report = outcome.kv_pool
    assert outcome.preemptions > 0 and np.isfinite(outcome.finish_s).all()
    # every preempted request with KV came back from the pool (it had room for all)
    assert report["readmissions"] > 0 and report["hit_rate"] == 1.0
    assert report["bytes_moved"] > 0 and report["stall_s"] > 0 and sim.kv_pool.used_bytes == 0.0
    for replica in sim.front + sim.decoders:  # the conservation of the scheduler tests
        assert (replica.kv_used, replica.n_running, replica.n_dec, replica.sum_ctx) == (0, 0, 0, 0)
    # a resumed request samples its remaining tokens once each (none is sampled twice or lost)
    assert sum(w.logits_tokens for w in works) == int(outcome.output_len.sum())


def test_resuming_from_the_pool_computes_fewer_prompt_tokens_than_recomputing():
    _, recomputed, recompute_works = simulate(None)
    _, resumed, resume_works = simulate(config())
    assert recomputed.preemptions > 0 and resumed.preemptions > 0
    recompute_tokens = sum(w.tokens for w in recompute_works)
    assert sum(w.tokens for w in resume_works) < recompute_tokens - 10 * resumed.preemptions


def test_a_pool_too_small_for_any_kv_changes_nothing_but_its_report():
    _, without, _ = simulate(None)
    _, tiny, _ = simulate(config(capacity_bytes=1.0))
    assert tiny.preemptions == without.preemptions > 0
    for name in ("first_token_s", "finish_s"):
        assert np.array_equal(getattr(tiny, name), getattr(without, name))
    assert tiny.kv_pool["hit_rate"] == 0.0 and tiny.kv_pool["readmissions"] > 0
    assert tiny.kv_pool["bytes_moved"] == tiny.kv_pool["stall_s"] == 0.0
    assert without.kv_pool is None and summarize(without, 1.0, 0.05).kv_pool is None
