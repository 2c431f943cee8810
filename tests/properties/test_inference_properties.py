"""Physical bounds: decode never beats bytes / aggregate HBM bandwidth; prefill never beats
FLOPs / aggregate peak (hypothesis over models, layouts, batches and contexts)."""

from hypothesis import given
from hypothesis import strategies as st

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.inference.step import CommunicationModel, InferenceLayout, step_coefficients, step_time
from fabricsim.specs import DTYPE_BYTES, Dtype
from fabricsim.transformer.inference import StepWork, prefill_attention_pairs, step_bytes, step_flops, token_costs

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
