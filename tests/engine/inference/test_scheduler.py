"""Serving simulation: continuous batching, chunked prefill, preemption, disaggregation, traces."""

import math

import numpy as np
import pytest

from fabricsim.engine.inference.scheduler import ClusterConfig, SchedulerConfig, ServingSimulation, summarize
from fabricsim.errors import FabricsimError
from fabricsim.workload.requests import LengthDist, parse_length_dist, parse_trace, poisson_stream


def timer(work):
    """A toy step: 5 ms + 20 us per token + 1 ns per KV token read."""
    return 5e-3 + 20e-6 * work.tokens + 1e-9 * work.kv_tokens_read


def stream(rate, count=400, inp=200, out=50, seed=3):
    return poisson_stream(rate, count, (LengthDist("fixed", inp), LengthDist("fixed", out)), (10**6, 10**6), seed)


def run(rate, kv=200_000, **extra):
    cfg = ClusterConfig(SchedulerConfig(kv, token_budget=extra.pop("budget", 2048)), timer, **extra)
    return summarize(ServingSimulation(stream(rate), cfg).run(), 1.0, 0.05)


def test_every_request_finishes_and_percentiles_are_ordered():
    summary = run(20.0)
    assert summary.completed == summary.requests == 400
    for p in (summary.ttft, summary.tpot, summary.e2e):
        assert p.p50 <= p.p90 <= p.p99
    assert summary.ttft.p50 > 0 and summary.tpot.p50 >= 5e-3


def test_deterministic():
    assert run(50.0) == run(50.0)


def test_throughput_saturates_and_p99_ttft_rises_past_the_knee():
    rates = [10.0, 50.0, 200.0, 1000.0, 5000.0]
    results = [run(r) for r in rates]
    throughput = [s.output_tokens_per_s for s in results]
    assert throughput[1] > 4 * throughput[0]
    assert throughput[-1] < 1.3 * throughput[-2]  # saturated
    assert results[-1].ttft.p99 > 10 * results[0].ttft.p99
    assert all(s.ttft.p99 >= s.ttft.p50 for s in results)


def test_small_kv_cache_preempts_but_completes():
    summary = run(1000.0, kv=3000)
    assert summary.preemptions > 0
    assert summary.completed == 400


def test_disaggregated_pools_complete_with_transfer_delay():
    base = run(50.0, mixed=0, prefill=1, decode=1, transfer_s=lambda tokens: 0.0)
    slow = run(50.0, mixed=0, prefill=1, decode=1, transfer_s=lambda tokens: 1e-4 * tokens)
    assert base.completed == slow.completed == 400
    assert slow.e2e.p50 > base.e2e.p50 + 0.015


def test_more_replicas_cut_queueing():
    one = run(2000.0)
    four = run(2000.0, mixed=4)
    assert four.ttft.p50 < one.ttft.p50


def test_length_distributions():
    assert parse_length_dist("512", "x") == LengthDist("fixed", 512)
    uni = parse_length_dist("uniform:10,20", "x")
    assert uni.upper_bound == 20
    log = parse_length_dist("lognormal:300,0.5", "x")
    values = poisson_stream(math.inf, 5000, (log, uni), (10**6, 10**6), 1)
    assert abs(values.input_len.mean() - 300) < 15 and values.output_len.max() <= 20
    assert np.all(values.arrival_s == 0)
    for bad in ("abc", "uniform:5", "uniform:9,3", "0", "gamma:1,2"):
        with pytest.raises(FabricsimError):
            parse_length_dist(bad, "input-len")


def test_trace_csv_and_jsonl():
    csv_text = "arrival_s,input_len,output_len\n0.5,100,10\n0.1,200,20\n"
    trace = parse_trace(csv_text, jsonl=False)
    assert trace.arrival_s.tolist() == [0.1, 0.5] and trace.input_len.tolist() == [200, 100]
    jsonl = (
        '{"timestamp": 0, "prompt_len": 5, "output_tokens": 3}\n\n'
        '{"arrival_s": 1, "input_len": 7, "output_len": 2}\n'
    )
    assert parse_trace(jsonl, jsonl=True).output_len.tolist() == [3, 2]


@pytest.mark.parametrize(
    ("text", "jsonl", "line"),
    [
        ("arrival_s,input_len,output_len\n0,10,5\n1,ten,5\n", False, "line 3"),
        ("arrival_s,input_len\n0,10\n", False, "line 2"),
        ('{"arrival_s": 0, "input_len": 1, "output_len": 1}\n{oops\n', True, "line 2"),
        ('{"arrival_s": -1, "input_len": 1, "output_len": 1}\n', True, "line 1"),
    ],
)
def test_bad_trace_rows_name_the_line(text, jsonl, line):
    with pytest.raises(FabricsimError) as err:
        parse_trace(text, jsonl)
    assert line in str(err.value)


def _fit_scenario(model, gpus, **extra):
    from fabricsim import catalog
    from fabricsim.engine.inference.serving import ServeScenario
    from fabricsim.engine.inference.step import LayoutRequest, resolve_layout

    model_spec, system = catalog.load_model(model), catalog.load_system("dgx-h100")
    layout = resolve_layout(model_spec, system, LayoutRequest(gpus, 1, None, None, None, None))
    return ServeScenario(model_spec, system, layout, **extra)


def _lengths(inp, out):
    from fabricsim.workload.requests import RequestStream

    return RequestStream(np.zeros(1), np.array([inp]), np.array([out]))


def test_weights_that_do_not_fit_are_a_fit_result_with_infer_memory():
    from fabricsim.engine.inference.analytic import InferScenario, memory_use
    from fabricsim.engine.inference.serving import pool_fits

    scenario = _fit_scenario("llama3-405b", 1)
    (pool,) = pool_fits(scenario, _lengths(100, 10))
    assert not pool.fits and pool.role == "mixed"
    assert pool.kv_capacity_tokens == 0 and pool.longest_request_tokens == 110
    assert pool.memory_per_gpu_bytes > 8 * pool.memory_capacity_bytes  # 405B BF16 weights ~ 810 GB
    infer_side = memory_use(InferScenario(scenario.model, scenario.system, scenario.layout, 100, 10, 1), 1)
    assert pool.memory_per_gpu_bytes == infer_side.per_gpu_bytes
    (small,) = pool_fits(_fit_scenario("llama3-8b", 1), _lengths(100, 10))
    assert small.fits and small.memory_per_gpu_bytes < small.memory_capacity_bytes


def test_kv_cache_shorter_than_the_longest_request_does_not_fit_per_pool():
    from fabricsim.engine.inference.serving import pool_fits, replica_kv_tokens

    scenario = _fit_scenario("llama3-8b", 2, kv_free_fraction=0.005, disaggregate=(1, 1))
    tokens = replica_kv_tokens(scenario)
    assert 1000 < tokens < 10_000
    prefill, decode = pool_fits(scenario, _lengths(tokens - 50, 100))
    assert (prefill.role, prefill.fits, prefill.longest_request_tokens) == ("prefill", True, tokens - 50)
    assert (decode.role, decode.fits, decode.longest_request_tokens) == ("decode", False, tokens + 50)
    assert decode.memory_per_gpu_bytes <= decode.memory_capacity_bytes  # weights fit; the KV budget does not


def test_serve_api_returns_a_result_when_nothing_fits():
    from fabricsim import api

    result = api.serve("llama3-405b", "dgx-h100", 1, arrival_rate=1.0, requests=10, input_len="100",
                       output_len="10", seed=1)
    assert not result.fits and result.completed == 0 and result.requests == 10
    assert result.memory_per_gpu_bytes > result.memory_capacity_bytes == 80e9
    assert all(math.isnan(v) for key in ("ttft_s", "tpot_s", "e2e_s") for v in dict(getattr(result, key)).values())
    fitting = api.serve("llama3-8b", "dgx-h100", 1, arrival_rate=1.0, requests=10, input_len="100", output_len="10")
    assert fitting.fits and fitting.completed == 10 and fitting.kv_capacity_tokens >= 110
    assert fitting.memory_per_gpu_bytes < fitting.memory_capacity_bytes


class _Recorder:
    """The toy step timer, keeping every step's work."""

    def __init__(self):
        self.works = []

    def __call__(self, work):
        self.works.append(work)
        return timer(work)


def _recorded(rate, kv=200_000, budget=2048, max_batch=1024, inp=200, out=50, count=400, **extra):
    record = _Recorder()
    cfg = ClusterConfig(SchedulerConfig(kv, token_budget=budget, max_batch=max_batch), record, **extra)
    sim = ServingSimulation(stream(rate, count=count, inp=inp, out=out), cfg)
    return sim, sim.run(), record.works


@pytest.mark.parametrize(("kv", "extra"), [
    (200_000, {}),                                          # no preemption
    (3000, {}),                                             # preemptions: recomputed requests
    (200_000, {"mixed": 0, "prefill": 1, "decode": 1}),     # disaggregated: KV handed off
    (3000, {"mixed": 0, "prefill": 1, "decode": 1}),
])
def test_every_kv_slot_taken_is_given_back(kv, extra):
    # conservation: once every request has finished, each replica holds no KV and runs nothing
    # (a release that frees more, or less, than the admission and the decoded tokens took leaves
    # a non-zero balance)
    sim, outcome, _ = _recorded(1000.0, kv=kv, **extra)
    assert np.isfinite(outcome.finish_s).all()
    for replica in sim.front + sim.decoders:
        assert (replica.kv_used, replica.n_running, replica.n_dec, replica.sum_ctx) == (0, 0, 0, 0)


@pytest.mark.parametrize("extra", [{}, {"mixed": 0, "prefill": 1, "decode": 1}])
def test_one_sampled_token_per_output_token(extra):
    # conservation: every output token is sampled once (the first by the step that finishes the
    # prompt, the others by decode steps), so the steps' logits tokens add up to the output tokens
    lengths = {"inp": 300, "out": 7, "count": 200}
    _, outcome, works = _recorded(500.0, **lengths, **extra)
    assert outcome.preemptions == 0
    assert sum(w.logits_tokens for w in works) == int(outcome.output_len.sum()) == 200 * 7
    # every step samples at most one token per sequence it runs to the end of its prompt or decodes
    assert all(w.logits_tokens <= w.tokens for w in works)


@pytest.mark.parametrize("budget", [256, 512, 1000])
def test_no_step_exceeds_the_token_budget(budget):
    # max_num_batched_tokens: decode tokens and prompt chunks together stay within the budget
    # (decodes first, prompts chunked into what is left), while prompts longer than it are chunked
    _, outcome, works = _recorded(2000.0, budget=budget, max_batch=64, inp=300, out=40, count=300)
    assert np.isfinite(outcome.finish_s).all()
    assert max(w.tokens for w in works) <= budget
    assert max(w.tokens for w in works) > budget // 2  # the budget binds: steps are full
