"""Replica step model: layout checks, weights per GPU, step time on the fabric."""

import pytest

from fabricsim.catalog import load_model, load_system
from fabricsim.engine.inference.step import (
    CommunicationModel,
    InferenceLayout,
    LayoutRequest,
    check_lengths,
    resolve_layout,
    step_coefficients,
    step_time,
    validate_layout,
    weight_memory_per_gpu,
)
from fabricsim.errors import FabricsimError
from fabricsim.transformer.inference import StepWork

H100 = load_system("dgx-h100")


@pytest.mark.parametrize(
    ("model", "layout", "field"),
    [
        ("llama3-70b", InferenceLayout(tensor_parallel=3), "tp"),
        ("llama3-70b", InferenceLayout(expert_parallel=2), "ep"),
        ("deepseek-v3", InferenceLayout(expert_parallel=3), "ep"),
        ("llama3-8b", InferenceLayout(weight_dtype="int3"), "dtype"),
        ("llama3-8b", InferenceLayout(pipeline_parallel=64), "pp"),
    ],
)
def test_bad_layouts_name_the_field(model, layout, field):
    with pytest.raises(FabricsimError) as err:
        validate_layout(load_model(model), layout)
    assert err.value.field == field


def test_resolve_defaults_and_replicas():
    layout = resolve_layout(load_model("llama3-8b"), H100, LayoutRequest(16, tensor_parallel=2))
    assert layout.replicas == 8 and layout.kv_dtype == "bf16"
    auto = resolve_layout(load_model("llama3-70b"), H100, LayoutRequest(16, dtype="fp8"))
    assert auto.tensor_parallel == 8 and auto.replicas == 2 and auto.kv_dtype == "fp8"
    moe = resolve_layout(load_model("deepseek-v3"), H100, LayoutRequest(16, expert_parallel=16))
    assert moe.tensor_parallel == 1 and moe.attention_data_parallel == 16 and moe.replicas == 1


@pytest.mark.parametrize("model", ["llama3-70b", "deepseek-v3"])
def test_default_tp_is_a_power_of_two_on_a_72_gpu_domain(model):
    # 72 halves to 36, 18, 9, 4 and would skip 8; the default is the largest power of two that fits
    layout = resolve_layout(load_model(model), load_system("gb200-nvl72"), LayoutRequest(72))
    assert layout.tensor_parallel == 8 and layout.replicas == 9


def test_lengths_beyond_context_are_rejected():
    with pytest.raises(FabricsimError):
        check_lengths(load_model("llama3-70b"), 8000, 500)


def test_fp8_weights_halve_memory():
    model = load_model("llama3.3-70b")
    bf16 = weight_memory_per_gpu(model, InferenceLayout(tensor_parallel=2)).total_bytes
    fp8 = weight_memory_per_gpu(model, InferenceLayout(tensor_parallel=2, weight_dtype="fp8")).total_bytes
    assert fp8 == pytest.approx(bf16 / 2)
    assert 34e9 < fp8 < 37e9


def _decode(model, layout, batch, context):
    coeffs = step_coefficients(model, H100, layout)
    comm = CommunicationModel(H100, layout, model)
    work = StepWork(tokens=batch, decode_pairs=batch * context, logits_tokens=batch, kv_tokens_read=batch * context)
    return step_time(coeffs, comm, work)


def test_decode_step_pays_tp_all_reduces_only_with_tp():
    model = load_model("llama3-70b")
    assert _decode(model, InferenceLayout(tensor_parallel=1), 8, 1000).communication_s == 0
    tp8 = _decode(model, InferenceLayout(tensor_parallel=8), 8, 1000)
    # 2 all-reduces per layer, each at least a few microseconds (latency bound)
    assert tp8.communication_s > 2 * model.num_hidden_layers * 2e-6


def test_decode_is_slower_with_longer_context_and_bigger_batch():
    model = load_model("llama3-8b")
    layout = InferenceLayout()
    assert _decode(model, layout, 64, 4000).total_s > _decode(model, layout, 64, 500).total_s
    assert _decode(model, layout, 256, 1000).total_s > _decode(model, layout, 16, 1000).total_s


def test_expert_parallel_adds_all_to_all_across_nodes():
    model = load_model("deepseek-v3")
    layout = InferenceLayout(expert_parallel=16, weight_dtype="fp8")
    parts = _decode(model, layout, 256, 1000)
    assert parts.communication_s > 0


def test_uneven_pipeline_steps_at_the_pace_of_the_largest_stage():
    # 126 layers over 4 stages: the slowest stage has 32 layers, like a 128-layer model's stages
    model = load_model("llama3-405b")
    padded = model.model_copy(update={"num_hidden_layers": 128})
    layout = InferenceLayout(tensor_parallel=8, pipeline_parallel=4)
    uneven, even = _decode(model, layout, 64, 2000), _decode(padded, layout, 64, 2000)
    assert uneven.attention_s == pytest.approx(even.attention_s, rel=1e-12)
    assert uneven.communication_s == pytest.approx(even.communication_s, rel=1e-12)
    assert step_coefficients(model, H100, layout).stage_share == 32 / 126


def test_collectives_carry_sixteen_bit_activations() -> None:
    """Inference engines exchange hidden states in 16 bits (BF16/FP16) even with FP8 weights and KV
    (TensorRT-LLM and vLLM all-reduce BF16 activations): each TP all-reduce of a decode step of
    ``tokens`` tokens carries tokens x hidden x 2 bytes, and a pipeline hand-off the same."""
    from fabricsim.catalog import load_model, load_system
    from fabricsim.engine.inference.step import CommunicationModel, InferenceLayout

    model, system = load_model("llama3-70b"), load_system("dgx-h100")
    comm = CommunicationModel(system, InferenceLayout(8, 2, 1, "fp8", "fp8"), model)
    calls = comm.calls(64)
    assert calls and all(call.size_bytes == 64 * model.hidden_size * 2 for call in calls)
    assert comm.p2p_bytes(64) == 64 * model.hidden_size * 2


def test_framework_memory_is_the_documented_per_gpu_reserve() -> None:
    """Every GPU keeps 3 GB outside the model: CUDA context, NCCL buffers and cuBLAS workspace
    (1-2 GB measured for PyTorch + NCCL) plus allocator head-room, in training as in serving."""
    from fabricsim import api

    result = api.train("llama3-8b", "dgx-h100", 8, 8, 2048, tp=1).to_json()
    assert result["memory_breakdown_bytes"]["framework"] == 3e9


# The kernels of one TensorRT-LLM Llama decoder layer, besides its collectives (tensorrt_llm/models/
# llama/model.py LLaMADecoderLayer: input_layernorm, attention = QKV GEMM, RoPE + KV-cache write,
# fused attention, dense GEMM; post_layernorm fused with the residual add; MLP = gate/up GEMM,
# SwiGLU, down GEMM).
LLAMA_LAYER_KERNELS = ("rmsnorm", "qkv_gemm", "rope_kv_write", "attention", "o_gemm", "add_rmsnorm",
                       "gate_up_gemm", "swiglu", "down_gemm")


@pytest.mark.parametrize(("model_name", "pp", "layers_on_slowest_stage"),
                         [("llama3-8b", 1, 32), ("llama3-405b", 4, 32), ("llama3-70b", 3, 27)])
def test_launch_overhead_is_one_per_kernel_of_each_layer_on_the_slowest_stage(model_name, pp, layers_on_slowest_stage):
    from fabricsim.engine.inference.step import STEP_KERNELS
    from fabricsim.transformer.constants import KERNEL_OVERHEAD_S

    model = load_model(model_name)
    c = step_coefficients(model, H100, InferenceLayout(tensor_parallel=8, pipeline_parallel=pp))
    # plus the step's own kernels (embedding, final norm, LM head, two sampler kernels); the attention
    # kernel's fixed time is charged with attention
    expected = (layers_on_slowest_stage * (len(LLAMA_LAYER_KERNELS) - 1) + STEP_KERNELS) * KERNEL_OVERHEAD_S
    assert c.kernel_overhead_s == pytest.approx(expected, rel=1e-12)
    assert c.attention_fixed_s == pytest.approx(layers_on_slowest_stage * ATTENTION_KERNEL_FIXED_S, rel=1e-12)


@pytest.mark.parametrize(("tp", "expected_bytes"), [
    # llama3-8b: hidden 4096, SwiGLU intermediate 14,336, 32 layers, bf16 activations. Per layer and
    # token: two fused residual-add + RMSNorm kernels, each reading x and the residual and writing
    # both (2 x 4 x 2 B x 4096 = 65,536 B, not split by TP); SwiGLU reads gate and up and writes their
    # product (3 x 2 B x 14,336 = 86,016 B, split over TP).
    (1, 32 * (65_536 + 86_016)),       # 4,849,664 B
    (2, 32 * (65_536 + 86_016 / 2)),   # 3,473,408 B
])
def test_elementwise_traffic_is_the_norm_and_activation_kernels_reads_and_writes(tp, expected_bytes):
    c = step_coefficients(load_model("llama3-8b"), H100, InferenceLayout(tensor_parallel=tp))
    assert c.elementwise_bytes_per_token == pytest.approx(expected_bytes, rel=1e-12)
    # and it is charged at the achieved HBM rate per token of the step: one more token adds it
    model = load_model("llama3-8b")
    comm = CommunicationModel(H100, InferenceLayout(tensor_parallel=tp), model)
    tiny = [step_time(c, comm, StepWork(tokens=n, logits_tokens=0)).linear_s for n in (1, 2)]
    # (both steps are bound by the weight read, the same for 1 and 2 tokens)
    assert tiny[1] - tiny[0] == pytest.approx(expected_bytes / c.hbm_Bps, rel=1e-9)


@pytest.mark.parametrize("tp", [1, 2])
def test_sampling_traffic_is_the_logits_written_then_read(tp):
    # llama3-8b: 128,256-entry vocabulary split over TP; the LM head writes each sampled token's
    # 16-bit logits (2 B) and the sampler reads them back (2 B)
    c = step_coefficients(load_model("llama3-8b"), H100, InferenceLayout(tensor_parallel=tp))
    assert c.logit_bytes_per_token == pytest.approx(128_256 / tp * (2 + 2), rel=1e-12)
    model = load_model("llama3-8b")
    comm = CommunicationModel(H100, InferenceLayout(tensor_parallel=tp), model)
    plain, sampled = (step_time(c, comm, StepWork(tokens=1, logits_tokens=n)).linear_s for n in (0, 1))
    assert sampled - plain == pytest.approx(128_256 / tp * (2 + 2) / c.hbm_Bps, rel=1e-9)


# --- the costs a serving step pays (issue 24 item 3) and the fast step timer ---------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fabricsim.engine.inference.step import (  # noqa: E402
    GEMM_KERNELS_PER_LAYER,
    KERNELS_PER_LAYER,
    STEP_KERNELS,
    StepTimer,
    compute_parts,
    token_terms,
)
from fabricsim.transformer.constants import CUDA_GRAPH_KERNEL_OVERHEAD_S, KERNEL_OVERHEAD_S  # noqa: E402
from fabricsim.transformer.inference import prefill_attention_pairs  # noqa: E402
from fabricsim.transformer.kernels import ATTENTION_KERNEL_FIXED_S, KERNEL_FIXED_S, hbm_achieved_Bps  # noqa: E402

LLAMA8 = load_model("llama3-8b")


def _tp1(model=LLAMA8, system=H100, **kw):
    layout = resolve_layout(model, system, LayoutRequest(1, tensor_parallel=1))
    return step_coefficients(model, system, layout, **kw), CommunicationModel(system, layout, model)


def test_kv_write_is_tokens_x_layers_x_bytes_over_hbm():
    c, _ = _tp1()
    # Llama 3 8B: K and V of 8 KV heads x 128 at 16 bit = 4,096 B per token and layer, 32 layers
    closed = 1000 * 32 * 4096 / hbm_achieved_Bps(H100.device)
    assert token_terms(c, 1000).kv_write_s == pytest.approx(closed, rel=1e-12)


def test_prefill_pays_the_kv_write_beside_a_compute_bound_attention():
    c, _ = _tp1()
    tokens = 4096.0
    work = StepWork(tokens=tokens, prefill_pairs=prefill_attention_pairs(tokens, 0.0), logits_tokens=1)
    _, attention_s = compute_parts(c, work)
    compute_s = work.prefill_pairs * c.costs.prefill_attention_flops_per_pair / (
        c.attention_peak_flops * c.attention_efficiency)
    assert compute_s > tokens * c.kv_bytes_per_token_gpu / c.hbm_Bps  # the old max() hid the write
    write_s = tokens * 32 * 4096 / c.hbm_Bps
    assert attention_s == pytest.approx(compute_s + 32 * ATTENTION_KERNEL_FIXED_S + write_s, rel=1e-12)


def test_decode_attention_is_its_kv_reads_plus_a_fixed_time_per_layer():
    c, _ = _tp1()
    work = StepWork(tokens=64, decode_pairs=64 * 1000.0, logits_tokens=64, kv_tokens_read=64 * 1000.0)
    _, attention_s = compute_parts(c, work)
    reads_s = 64 * 1001 * 32 * 4096 / c.hbm_Bps
    assert attention_s == pytest.approx(reads_s + 32 * ATTENTION_KERNEL_FIXED_S + 64 * 32 * 4096 / c.hbm_Bps)


def test_cuda_graphs_remove_launch_floors_from_decode_steps_only():
    graphs, comm = _tp1()
    eager, _ = _tp1(cuda_graphs=False)
    decode = StepWork(tokens=64, decode_pairs=64 * 1000.0, logits_tokens=64, kv_tokens_read=64 * 1000.0)
    saved = step_time(eager, comm, decode).total_s - step_time(graphs, comm, decode).total_s
    others = KERNELS_PER_LAYER - GEMM_KERNELS_PER_LAYER - 1  # attention keeps its fixed time either way
    per_layer = (KERNELS_PER_LAYER - 1) * KERNEL_OVERHEAD_S - (
        GEMM_KERNELS_PER_LAYER * KERNEL_FIXED_S + others * CUDA_GRAPH_KERNEL_OVERHEAD_S)
    per_step = STEP_KERNELS * KERNEL_OVERHEAD_S - (KERNEL_FIXED_S + (STEP_KERNELS - 1) * CUDA_GRAPH_KERNEL_OVERHEAD_S)
    assert saved == pytest.approx(32 * per_layer + per_step, rel=1e-9)
    assert 32 * per_layer == pytest.approx(32 * (40.0 - 22.0) * 1e-6)
    prefill = StepWork(tokens=64, prefill_pairs=prefill_attention_pairs(64, 0.0), logits_tokens=1)
    assert step_time(eager, comm, prefill).total_s == step_time(graphs, comm, prefill).total_s
    big = StepWork(tokens=1024, decode_pairs=1024 * 100.0, logits_tokens=1024, kv_tokens_read=1024 * 100.0)
    assert step_time(eager, comm, big).total_s == step_time(graphs, comm, big).total_s  # above the captured sizes


_TIMERS = {
    "llama3-8b tp1": _tp1(),
    "llama3-70b tp4 pp2": (lambda m, lay: (step_coefficients(m, H100, lay), CommunicationModel(H100, lay, m)))(
        load_model("llama3-70b"),
        resolve_layout(load_model("llama3-70b"), H100, LayoutRequest(8, tensor_parallel=4, pipeline_parallel=2))),
    "deepseek-v3 ep16": (lambda m, lay: (step_coefficients(m, H100, lay), CommunicationModel(H100, lay, m)))(
        load_model("deepseek-v3"),
        resolve_layout(load_model("deepseek-v3"), H100, LayoutRequest(16, expert_parallel=16, dtype="fp8"))),
}


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(sorted(_TIMERS)),
    works=st.lists(
        st.tuples(st.integers(1, 8192), st.integers(0, 64), st.integers(0, 2_000_000), st.integers(0, 4096)),
        min_size=1, max_size=6),
)
def test_fast_timer_equals_the_step_formula(name, works):
    c, comm = _TIMERS[name]
    timer = StepTimer(c, comm)
    for tokens, decode, context, prior in works:  # repeated token counts hit the kept table
        decode = min(decode, tokens)
        chunk = tokens - decode
        work = StepWork(tokens=tokens, prefill_pairs=prefill_attention_pairs(chunk, prior) if chunk else 0.0,
                        decode_pairs=float(context), logits_tokens=decode + (chunk > 0),
                        kv_tokens_read=float(context + prior))
        for _ in range(2):
            assert timer(work) == pytest.approx(step_time(c, comm, work).total_s, rel=1e-9)


def test_fast_timer_starts_over_when_its_table_is_full(monkeypatch):
    from fabricsim.engine.inference import step as step_module

    monkeypatch.setattr(step_module, "LINEAR_TABLE_MAX", 2)
    c, comm = _TIMERS["llama3-8b tp1"]
    timer = StepTimer(c, comm)
    works = [StepWork(tokens=n, decode_pairs=n * 500.0, logits_tokens=n, kv_tokens_read=n * 500.0)
             for n in (1, 2, 3, 1)]
    for work in works:
        assert timer(work) == step_time(c, comm, work).total_s


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(_TIMERS)),
    steps=st.lists(st.tuples(st.integers(1, 1024), st.integers(0, 4_000_000)), min_size=1, max_size=6),
)
def test_decode_fast_path_is_the_timer_to_the_bit(name, steps):
    # StepTimer.decode_s skips building the StepWork of a decode-only step: the same float as the
    # general call, first call (fills the tables) and later ones (reads them) alike
    c, comm = _TIMERS[name]
    fast, general = StepTimer(c, comm), StepTimer(c, comm)
    for sequences, context in steps:
        work = StepWork(tokens=sequences, prefill_pairs=0, decode_pairs=context, logits_tokens=sequences,
                        kv_tokens_read=context)
        for _ in range(2):
            assert fast.decode_s(sequences, context) == general(work)
