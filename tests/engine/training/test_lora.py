"""LoRA fine-tuning (``--lora-rank``, issue 25 item 4): the base weights frozen, backward without
weight-gradient GEMMs, gradients / DP reduction / optimizer over the adapters only."""

import contextlib
import io
import json

import pytest

from fabricsim import catalog
from fabricsim.cli.app import main
from fabricsim.engine.training.analytic import estimate_training
from fabricsim.specs import ParallelLayout
from fabricsim.transformer.flops import model_dims, weight_gradient_flops
from fabricsim.validation.commands import model_file
from fabricsim.workload.training import StageLayers, TrainingOptions, lora_stage_parameters

LLAMA2_70B = catalog.load_model(model_file("llama2-70b"))
SYSTEM = catalog.load_system("dgx-h100")
LAYOUT = ParallelLayout(tensor_parallel=4, pipeline_parallel=1, data_parallel=2, micro_batch_size=1,
                        sequence_parallel=True, dtype="fp8")


def _estimate(rank: int, layout: ParallelLayout = LAYOUT):
    options = TrainingOptions(flash_attention=True, overlap_grad_reduce=True, lora_rank=rank)
    return estimate_training(LLAMA2_70B, SYSTEM, layout, 8, 8192, options)


def test_adapter_count_of_llama2_70b_rank_16() -> None:
    """r (h + (heads + 2 kv) d) for QKV plus r (heads d + h) for the output projection, per layer:
    16 x (8192 + 10240) + 16 x (8192 + 8192) = 557,056; x 80 layers = 44.6 M trainable parameters."""
    dims = model_dims(LLAMA2_70B)
    assert lora_stage_parameters(dims, StageLayers(80, 0), 1, 16) == 80 * 557_056
    assert lora_stage_parameters(dims, StageLayers(80, 0), 4, 16) == 80 * 557_056 / 4


def test_frozen_base_keeps_forward_and_drops_weight_gradients() -> None:
    full, lora = _estimate(0), _estimate(16)
    assert lora.time.forward_compute_s == pytest.approx(full.time.forward_compute_s)
    # backward = activation gradients only: between the forward's time and the full backward's
    assert full.time.forward_compute_s < lora.time.backward_compute_s < full.time.backward_compute_s
    assert lora.step_time_s < full.step_time_s
    # gradients reduced and the optimizer run over 44.6 M adapters instead of 69 B weights
    assert lora.time.dp_comm_s < full.time.dp_comm_s / 100
    assert lora.time.optimizer_s < full.time.optimizer_s / 100


def test_lora_memory_keeps_the_weights_and_drops_base_gradients_and_optimizer_state() -> None:
    full, lora = _estimate(0), _estimate(16)
    assert lora.memory.weights == full.memory.weights
    adapters = lora_stage_parameters(model_dims(LLAMA2_70B), StageLayers(80, 0), 4, 16)
    gradient_bytes = TrainingOptions().gradient_bytes("fp8")
    assert lora.memory.gradients == pytest.approx(adapters * gradient_bytes)
    assert lora.memory.optimizer_states < full.memory.optimizer_states / 1000
    # a frozen (unadapted) MLP keeps neither its input nor FC2's input for a weight gradient
    assert lora.memory.activations < full.memory.activations


def test_model_flops_drop_the_weight_gradient_gemms() -> None:
    full, lora = _estimate(0), _estimate(16)
    dims = model_dims(LLAMA2_70B)
    assert full.model_flops - lora.model_flops == pytest.approx(weight_gradient_flops(dims, 8, 8192))
    # the weight-gradient GEMMs are one per forward GEMM: 2 x (weights used in GEMMs) x tokens
    gemm_params = dims.layers * (dims.attention_params + dims.dense_mlp_params) + dims.output_params
    assert weight_gradient_flops(dims, 8, 8192) == pytest.approx(2.0 * gemm_params * 8 * 8192, rel=1e-9)


def test_lora_rank_zero_is_full_training() -> None:
    assert _estimate(0).step_time_s == estimate_training(
        LLAMA2_70B, SYSTEM, LAYOUT, 8, 8192, TrainingOptions(flash_attention=True, overlap_grad_reduce=True)
    ).step_time_s


def _cli(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = main(["train", *args])
    return status, err.getvalue()


@pytest.mark.parametrize(
    ("model", "rank", "text"),
    [("llama3-8b", "-1", "lora-rank"), ("deepseek-v3", "8", "multi-head latent attention")],
)
def test_bad_lora_rank_is_one_line_exit_2(model, rank, text) -> None:
    status, err = _cli("--model", model, "--system", "dgx-h100", "--gpus", "64", "--global-batch", "64",
                       "--seq-len", "4096", "--tp", "8", "--lora-rank", rank)
    assert status == 2 and text in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_lora_rank_matches_the_engine() -> None:
    out = io.StringIO()
    args = ["train", "--model", model_file("llama2-70b"), "--system", "dgx-h100", "--gpus", "8", "--global-batch", "8",
            "--seq-len", "8192", "--tp", "4", "--dtype", "fp8", "--flash-attention", "--overlap-grad-reduce",
            "--lora-rank", "16", "--json"]
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    assert '"lora_rank": 16' in out.getvalue()
    assert f'"step_time_s": {_estimate(16).step_time_s!r}' in out.getvalue()


def test_simulated_step_reduces_the_adapters_only() -> None:
    """The event-driven engine runs the same gradient buckets as the closed form: the adapters'."""
    out = io.StringIO()
    args = ["train", "--model", model_file("llama2-70b"), "--system", "dgx-h100", "--gpus", "64", "--global-batch",
            "8", "--seq-len", "8192", "--tp", "4", "--cp", "2", "--dtype", "fp8", "--lora-rank", "16",
            "--fidelity", "simulate", "--json"]
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    simulated = json.loads(out.getvalue())
    layout = ParallelLayout(tensor_parallel=4, context_parallel=2, data_parallel=8, micro_batch_size=1,
                            sequence_parallel=True, dtype="fp8")
    analytic = estimate_training(LLAMA2_70B, SYSTEM, layout, 8, 8192, TrainingOptions(lora_rank=16))
    assert simulated["time_breakdown_s"]["dp_comm_s"] == pytest.approx(analytic.time.dp_comm_s, rel=1e-6)
    assert simulated["step_time_s"] == pytest.approx(analytic.step_time_s, rel=1e-6)
