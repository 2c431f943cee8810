"""Per-step FLOPs and bytes of prefill and decode."""

import pytest

from fabricsim.catalog import load_model
from fabricsim.transformer.inference import (
    StepWork,
    expected_distinct_experts,
    prefill_attention_pairs,
    step_bytes,
    step_flops,
    token_costs,
)
from fabricsim.transformer.parameters import parameter_counts


def test_causal_pairs_include_the_quadratic_term():
    assert prefill_attention_pairs(4, 0) == 10
    assert prefill_attention_pairs(2, 3) == 2 * 3 + 3
    # chunking a prompt conserves its pairs
    assert prefill_attention_pairs(3, 0) + prefill_attention_pairs(5, 3) == prefill_attention_pairs(8, 0)


def test_expected_distinct_experts_limits():
    assert expected_distinct_experts(256, 8, 1) == pytest.approx(8)
    assert expected_distinct_experts(256, 8, 10_000) == pytest.approx(256)
    assert expected_distinct_experts(256, 8, 0) == 0
    assert 8 < expected_distinct_experts(256, 8, 16) < 128


def test_dense_flops_are_two_per_parameter_per_token():
    model = load_model("llama3.1-8b")
    costs = token_costs(model)
    counts = parameter_counts(model)
    assert costs.dense_flops_per_token == pytest.approx(2 * (counts.total - counts.embedding - counts.output))
    assert costs.lm_head_flops_per_token == 2 * model.vocab_size * model.hidden_size
    one = step_flops(costs, StepWork(tokens=1, logits_tokens=1))
    assert one == pytest.approx(2 * (counts.total - counts.embedding), rel=1e-6)


def test_moe_reads_only_touched_experts():
    model = load_model("deepseek-v3")
    costs = token_costs(model)
    one = step_bytes(costs, StepWork(tokens=1), 1.0, 1.0)
    many = step_bytes(costs, StepWork(tokens=100_000), 1.0, 1.0)
    counts = parameter_counts(model)
    assert one < 0.1 * counts.total
    assert many == pytest.approx(counts.total - counts.embedding + 100_001 * costs.kv_elements_per_token, rel=1e-3)


def test_decode_bytes_grow_with_context():
    costs = token_costs(load_model("llama3.1-8b"))
    short = step_bytes(costs, StepWork(tokens=8, decode_pairs=800, kv_tokens_read=800), 1.0, 1.0)
    long = step_bytes(costs, StepWork(tokens=8, decode_pairs=8000, kv_tokens_read=8000), 1.0, 1.0)
    assert long - short == pytest.approx(7200 * costs.kv_elements_per_token)
