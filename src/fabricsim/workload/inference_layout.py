"""Inference layouts: how a model replica is sharded, defaults and checks (layer L5).

A replica spans ``pp x max(tp, ep)`` GPUs; ``ep > tp`` means DeepSeek-style attention data
parallelism (``ep / tp`` attention ranks, each with its own sequences and KV) with expert parallelism
over the stage. Glossary: tp tensor, pp pipeline, ep expert parallel.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.errors import FabricsimError
from fabricsim.specs import ModelSpec, SystemSpec
from fabricsim.specs.layout import SHORT_NAMES

INFERENCE_DTYPES = ("bf16", "fp16", "fp8", "fp4")


@dataclass(frozen=True, slots=True)
class InferenceLayout:
    """How one model replica is sharded; ``replicas`` copies serve independently."""

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    replicas: int = 1

    @property
    def attention_data_parallel(self) -> int:
        return max(self.tensor_parallel, self.expert_parallel) // self.tensor_parallel

    @property
    def stage_gpus(self) -> int:
        return max(self.tensor_parallel, self.expert_parallel)

    @property
    def replica_gpus(self) -> int:
        return self.pipeline_parallel * self.stage_gpus

    def as_dict(self) -> dict[str, object]:
        short = SHORT_NAMES  # the one long->short layout-name map
        return {
            short["tensor_parallel"]: self.tensor_parallel,
            short["pipeline_parallel"]: self.pipeline_parallel,
            short["expert_parallel"]: self.expert_parallel,
            "attention_dp": self.attention_data_parallel,
            "replicas": self.replicas,
            "replica_gpus": self.replica_gpus,
            "dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
        }


def check_dtype(dtype: str, field_name: str) -> str:
    """Return ``dtype`` if it is an inference dtype, else a one-line user error."""
    if dtype not in INFERENCE_DTYPES:
        raise FabricsimError(field_name, f"unknown dtype {dtype!r}", "use one of " + ", ".join(INFERENCE_DTYPES))
    return dtype


def validate_layout(model: ModelSpec, layout: InferenceLayout) -> None:
    """Raise a :class:`FabricsimError` unless ``layout`` can shard ``model``."""
    tp, pp, ep = layout.tensor_parallel, layout.pipeline_parallel, layout.expert_parallel
    for name, value in (("tp", tp), ("pp", pp), ("ep", ep)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise FabricsimError(name, f"must be a positive integer, got {value!r}")
    check_dtype(layout.weight_dtype, "dtype")
    check_dtype(layout.kv_dtype, "kv-dtype")
    if model.num_attention_heads % tp:
        heads = model.num_attention_heads
        raise FabricsimError("tp", f"{tp} does not divide the {heads} attention heads of {model.name}")
    kv = model.kv_heads
    if not model.is_mla and kv % tp and tp % kv:
        raise FabricsimError("tp", f"{tp} neither divides nor is a multiple of the {kv} KV heads of {model.name}")
    if pp > model.num_hidden_layers:
        raise FabricsimError("pp", f"{pp} stages exceed the {model.num_hidden_layers} layers of {model.name}")
    if ep > 1 and not model.is_moe:
        raise FabricsimError("ep", f"{model.name} has no experts", "use --ep 1 for a dense model")
    if model.is_moe and model.num_local_experts % ep:
        raise FabricsimError("ep", f"{ep} does not divide the {model.num_local_experts} experts of {model.name}")
    if max(tp, ep) % min(tp, ep):
        raise FabricsimError("ep", f"ep {ep} and tp {tp} must divide one another",
                             "e.g. --tp 8 --ep 8 or --tp 1 --ep 16")


@dataclass(frozen=True, slots=True)
class LayoutRequest:
    """What the user asked for; ``None`` fields take defaults in :func:`resolve_layout`."""

    gpus: int
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    expert_parallel: int | None = None
    dtype: str | None = None
    kv_dtype: str | None = None


def resolve_layout(model: ModelSpec, system: SystemSpec, request: LayoutRequest) -> InferenceLayout:
    """Defaults: pp 1, ep 1, tp = the largest power of two ``<= min(gpus / pp, NVLink domain)`` that
    divides ``gpus`` and the heads (and divides or is a multiple of the KV heads; 1 when ep > 1:
    DeepSeek-style attention-DP), bf16 weights, FP8 KV
    for FP8/FP4 weights else bf16; ``replicas = gpus / replica_gpus`` (must divide)."""
    system.check_gpu_count(request.gpus)
    pp = request.pipeline_parallel or 1
    ep = request.expert_parallel or 1
    tp = request.tensor_parallel
    if tp is None:
        tp = 1 if ep > 1 else _default_tp(model, request.gpus, min(request.gpus // pp, system.scale_up.domain_gpus))
    dtype = check_dtype("bf16" if request.dtype is None else request.dtype, "dtype")  # "" is refused, not bf16
    kv_default = "fp8" if dtype in ("fp8", "fp4") else "bf16"
    kv_dtype = check_dtype(kv_default if request.kv_dtype is None else request.kv_dtype, "kv-dtype")
    layout = InferenceLayout(tp, pp, ep, dtype, kv_dtype)
    validate_layout(model, layout)
    if request.gpus % layout.replica_gpus:
        raise FabricsimError("gpus", f"{request.gpus} GPUs is not a multiple of the {layout.replica_gpus}-GPU replica "
                             f"(tp {tp} x pp {pp}, ep {ep})", "change --gpus or the layout")
    return InferenceLayout(tp, pp, ep, dtype, kv_dtype, replicas=request.gpus // layout.replica_gpus)


def _default_tp(model: ModelSpec, gpus: int, limit: int) -> int:
    """The largest power of two ``<= limit`` that divides ``gpus`` and suits the heads (see
    :func:`_bad_tp`); 1 if none does. A domain that is not a power of two (72 GPUs of an NVL72)
    still gets 8, not 72 halved to 9 and then 4."""
    tp = 1 << (limit.bit_length() - 1) if limit >= 1 else 1
    while tp > 1 and (gpus % tp or _bad_tp(model, tp)):
        tp //= 2
    return tp


def _bad_tp(model: ModelSpec, tp: int) -> bool:
    kv = model.kv_heads
    return bool(model.num_attention_heads % tp or (not model.is_mla and kv % tp and tp % kv))


def check_lengths(model: ModelSpec, input_len: float, output_len: float) -> None:
    """Positive lengths whose sum fits the model's context (``max_position_embeddings``)."""
    for name, value in (("input-len", input_len), ("output-len", output_len)):
        if value < 1:
            raise FabricsimError(name, f"must be at least 1 token, got {value!r}")
    if input_len + output_len > model.max_position_embeddings:
        raise FabricsimError(
            "input-len", f"input {input_len:g} + output {output_len:g} tokens exceed the "
            f"{model.max_position_embeddings}-token context of {model.name}", "use shorter sequences")
