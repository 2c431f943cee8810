"""Physical bounds: decode never beats bytes / aggregate HBM bandwidth; prefill never beats
FLOPs / aggregate peak (hypothesis over models, layouts, batches and contexts).

The decode bound is computed twice: from the model's own byte count, and from a count written here
from the ``config.json`` fields alone (weights that every decode step must read at least once and
the KV cache it attends over), so that an error in the model's byte accounting cannot hide.
"""

import math

from hypothesis import assume, given
from hypothesis import strategies as st

from fabricsim.catalog import load_model, load_system, names
from fabricsim.engine.inference.step import CommunicationModel, InferenceLayout, step_coefficients, step_time
from fabricsim.errors import FabricsimError
from fabricsim.specs import DTYPE_BYTES, Dtype, ModelSpec
from fabricsim.transformer.inference import StepWork, prefill_attention_pairs, step_bytes, step_flops, token_costs
from fabricsim.workload.inference_layout import validate_layout

CASES = [
    ("llama3-8b", "dgx-h100", 1, 1, 1),
    ("llama3-70b", "dgx-h100", 8, 1, 1),
    ("llama3-70b", "dgx-a100", 4, 2, 1),
    ("mixtral-8x22b", "dgx-h200", 8, 1, 8),
    ("deepseek-v3", "dgx-h200", 1, 1, 16),
    ("kimi-k2", "gb200-nvl72", 8, 1, 64),
]
cases = st.sampled_from(CASES)
dtypes = st.sampled_from(["bf16", "fp8", "fp4"])


def setup(case, dtype, kv_dtype):
    name, system_name, tp, pp, ep = case
    model, system = load_model(name), load_system(system_name)
    layout = InferenceLayout(tp, pp, ep, dtype, kv_dtype)
    return model, system, layout, step_coefficients(model, system, layout), CommunicationModel(system, layout, model)


@given(cases, dtypes, st.sampled_from(["bf16", "fp8"]), st.integers(1, 4096), st.integers(1, 32768))
def test_decode_never_beats_bytes_over_aggregate_hbm(case, dtype, kv_dtype, batch, context):
    model, system, layout, coeffs, comm = setup(case, dtype, kv_dtype)
    work = StepWork(tokens=batch, decode_pairs=batch * context, logits_tokens=batch, kv_tokens_read=batch * context)
    tpot = step_time(coeffs, comm, work).total_s
    moved = step_bytes(token_costs(model), work, DTYPE_BYTES[Dtype(dtype)], DTYPE_BYTES[Dtype(kv_dtype)])
    bound = moved / (layout.replica_gpus * system.device.hbm_bandwidth_Bps)
    assert tpot >= bound * (1 - 1e-9)


@given(cases, dtypes, st.integers(1, 64), st.integers(1, 16384))
def test_prefill_never_beats_flops_over_aggregate_peak(case, dtype, batch, prompt):
    model, system, layout, coeffs, comm = setup(case, dtype, "fp8")
    work = StepWork(tokens=batch * prompt, prefill_pairs=batch * prefill_attention_pairs(prompt, 0),
                    logits_tokens=batch)
    ttft = step_time(coeffs, comm, work).total_s
    peak = max(system.device.peak(dtype), system.device.peak("bf16"))
    bound = step_flops(token_costs(model), work) / (layout.replica_gpus * peak)
    assert ttft >= bound * (1 - 1e-9)


def min_decode_bytes(model: ModelSpec, batch: int, context: int, weight_bytes: float, kv_bytes: float) -> float:
    """Bytes one decode step must read at least, from the config alone: attention projections (GQA:
    q, k, v, o; MLA: the output projection only, a loose but safe floor), dense MLPs, per MoE layer
    the shared experts and the ``k`` routed experts that even perfectly aligned routing touches, the
    LM head; plus the KV cache of ``batch`` sequences of ``context`` tokens."""
    h, layers = model.hidden_size, model.num_hidden_layers
    mats = 3 if model.hidden_act in ("silu", "swiglu") else 2
    head = model.head_dim or h // model.num_attention_heads
    if model.kv_lora_rank:
        attention = model.num_attention_heads * (model.v_head_dim or head) * h
        kv_per_token = (model.kv_lora_rank + (model.qk_rope_head_dim or 0)) * layers
    else:
        kv = model.num_key_value_heads or model.num_attention_heads
        attention = 2 * h * model.num_attention_heads * head + 2 * h * kv * head
        kv_per_token = 2 * kv * head * layers
    experts = model.num_local_experts
    dense_layers = model.first_k_dense_replace if experts else layers
    moe_layers = layers - dense_layers
    expert_ffn = model.moe_intermediate_size or model.intermediate_size
    routed = min(experts, model.num_experts_per_tok) + model.n_shared_experts
    params = layers * attention + dense_layers * mats * h * model.intermediate_size
    params += moe_layers * routed * mats * h * expert_ffn + model.vocab_size * h
    return params * weight_bytes + batch * context * kv_per_token * kv_bytes


catalog_cases = st.tuples(
    st.sampled_from(names("models")), st.sampled_from(names("systems")), st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2]), st.sampled_from([1, 1, 8, 16]),
)


@given(catalog_cases, dtypes, st.sampled_from(["bf16", "fp8"]), st.integers(1, 1024), st.integers(1, 32768))
def test_decode_never_beats_config_bytes_over_datasheet_hbm(case, dtype, kv_dtype, batch, context):
    name, system_name, tp, pp, ep = case
    model, system = load_model(name), load_system(system_name)
    layout = InferenceLayout(tp, pp, ep, dtype, kv_dtype)
    try:
        validate_layout(model, layout)
        coeffs, comm = step_coefficients(model, system, layout), CommunicationModel(system, layout, model)
    except FabricsimError:
        assume(False)
    work = StepWork(tokens=batch, decode_pairs=batch * context, logits_tokens=batch, kv_tokens_read=batch * context)
    tpot = step_time(coeffs, comm, work).total_s
    needed = min_decode_bytes(model, batch, context, DTYPE_BYTES[Dtype(dtype)], DTYPE_BYTES[Dtype(kv_dtype)])
    # every GPU of the replica streams its share at no more than the datasheet HBM bandwidth
    assert math.isfinite(tpot)
    assert tpot >= needed / (layout.replica_gpus * system.device.hbm_bandwidth_Bps) * (1 - 1e-9), (case, tpot)
