"""A training iteration as work: layout checks, stages, and the communication it issues (layer L5).

Rank order (documented contract with ``collectives.place_group``): the tensor-parallel rank varies
fastest, then context, then data, then pipeline -- GPU ``g = tp_rank + tp·(cp_rank + cp·(dp_rank +
dp·pp_rank))`` (Megatron-LM's default order). So tensor-parallel groups are contiguous (inside
the NVLink domain first), context groups have stride tp, data groups stride tp·cp and pipeline
neighbours stride tp·cp·dp. Expert parallelism uses the first ``ep`` ranks of each data group
(stride tp·cp), expert-data-parallel groups stride tp·cp·ep.

Stages: layers are split over ``pp·vpp`` model chunks; when they do not divide evenly the first
chunks take one extra layer and the step is paced by the largest stage (ceil(L/pp) layers).
Stage 0 also holds the input embedding, the last stage the output layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricsim.errors import FabricsimError
from fabricsim.specs import ParallelLayout, Recompute
from fabricsim.transformer.flops import ModelDims

DTYPES = ("bf16", "fp16", "fp8")


@dataclass(frozen=True, slots=True)
class TrainingOptions:
    """How the framework runs the step, beyond the layout.

    ``flash_attention``: fused attention (no s x s scores in HBM); off reproduces Megatron-LM 2021-22.
    ``overlap_grad_reduce``: data-parallel gradient reduction in buckets overlapped with backward
    (Megatron-LM 2021 reduced after backward, not overlapped). ``overlap_tp_comm``: tensor-parallel
    collectives hidden behind GEMMs (Transformer Engine userbuffers); off by default.
    """

    flash_attention: bool = True
    overlap_grad_reduce: bool = True
    overlap_tp_comm: bool = False


def check_dtype(dtype: str) -> None:
    """Raise :class:`FabricsimError` unless ``dtype`` is a training dtype (:data:`DTYPES`)."""
    if dtype not in DTYPES:
        raise FabricsimError("dtype", f"unsupported training dtype {dtype!r}", "use " + ", ".join(DTYPES))


def _divides(field: str, value: int, total: int, what: str) -> None:
    if total % value:
        raise FabricsimError(field, f"{value} does not divide {what} ({total})", f"use a divisor of {total}")


def check_layout(dims: ModelDims, layout: ParallelLayout, gpus: int, global_batch: int, seq_len: int) -> int:
    """Raise :class:`FabricsimError` naming the field for an impossible layout; return micro-batches per step.

    The ONE home of the training layout rules that relate fields to each other and to the model
    (divisibility, products, dtype). Each field's own type and range (a positive degree, a ZeRO
    stage, a recompute mode) is checked once at the edge by :mod:`fabricsim.specs.inputs`; the
    planner builds only such layouts, so this function trusts them."""
    tp, pp, dp, cp = layout.tensor_parallel, layout.pipeline_parallel, layout.data_parallel, layout.context_parallel
    ep, vpp, mb = layout.expert_parallel, layout.virtual_stages, layout.micro_batch_size
    check_dtype(layout.dtype)
    _check_product(layout, gpus)
    if dims.heads % tp or dims.hidden % tp or (dims.kv_heads % tp and tp % dims.kv_heads):
        _check_tensor_parallel(dims, tp)
    if pp * vpp > dims.layers:
        raise FabricsimError("pp", f"pp*vpp = {pp * vpp} exceeds the {dims.layers} layers", "use fewer pipeline stages")
    if ep > 1:
        _check_expert_parallel(dims, ep, dp)
    if seq_len % cp:
        raise FabricsimError("cp", f"{cp} does not divide the sequence length {seq_len}")
    if global_batch % (dp * mb):
        raise FabricsimError(
            "global-batch",
            f"{global_batch} is not divisible by dp x micro-batch = {dp * mb}",
            "choose a global batch that is a multiple of dp x micro-batch",
        )
    microbatches = global_batch // (dp * mb)
    if vpp > 1 and microbatches % pp:
        raise FabricsimError(
            "vpp", f"the interleaved schedule needs micro-batches ({microbatches}) divisible by pp", "use --vpp 1"
        )
    return microbatches


def _check_product(layout: ParallelLayout, gpus: int) -> None:
    if layout.gpus != gpus:
        raise FabricsimError(
            "layout", f"tp*pp*dp*cp = {layout.gpus} but gpus = {gpus}", "make the product of the degrees equal --gpus"
        )


def _check_tensor_parallel(dims: ModelDims, tp: int) -> None:
    _divides("tp", tp, dims.heads, "the attention heads")
    _divides("tp", tp, dims.hidden, "the hidden size")
    raise FabricsimError("tp", f"{tp} and the {dims.kv_heads} KV heads do not divide each other")


def _check_expert_parallel(dims: ModelDims, ep: int, dp: int) -> None:
    if not dims.experts:
        raise FabricsimError("ep", "expert parallelism needs an MoE model", "use --ep 1 for a dense model")
    _divides("ep", ep, dims.experts, "the experts")
    _divides("ep", ep, dp, "the data-parallel size")


def resolve_layout(gpus: int, dims: ModelDims, **given: object) -> ParallelLayout:
    """Fill unset fields: tp = pp = cp = ep = vpp = micro_batch = 1, dp = gpus / (tp·pp·cp),
    ZeRO 1 for MoE models (the distributed optimizer every MoE recipe uses) else 0, recompute none,
    sequence parallel on when tp > 1, dtype bf16. ``given`` uses the ParallelLayout field names and
    holds values already checked at the edge (:mod:`fabricsim.specs.inputs`)."""
    values = {k: v for k, v in given.items() if v is not None}
    tp = values.get("tensor_parallel", 1)
    pp = values.get("pipeline_parallel", 1)
    cp = values.get("context_parallel", 1)
    if "data_parallel" not in values:
        denominator = tp * pp * cp  # type: ignore[operator]
        if gpus % denominator:
            field = "tp" if gpus % tp else "pp" if gpus % (tp * pp) else "cp"  # type: ignore[operator]
            raise FabricsimError(
                field, f"tp*pp*cp = {denominator} does not divide gpus = {gpus}", "choose tp, pp and cp dividing --gpus"
            )
        values["data_parallel"] = gpus // denominator
    values.setdefault("zero_stage", 1 if dims.experts else 0)
    values.setdefault("sequence_parallel", tp > 1)  # type: ignore[operator]
    values["recompute"] = Recompute(values.get("recompute", Recompute.NONE))
    layout = ParallelLayout(**values)  # type: ignore[arg-type]
    _check_product(layout, gpus)
    return layout


@dataclass(frozen=True, slots=True)
class StageLayers:
    """Layers of the largest pipeline stage, split into dense and MoE (worst case: MoE first)."""

    layers: int
    moe_layers: int

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers


def largest_stage(dims: ModelDims, pipeline_parallel: int) -> StageLayers:
    """The stage with ceil(L/pp) layers, holding as many MoE layers as there are."""
    layers = -(-dims.layers // pipeline_parallel)
    return StageLayers(layers=layers, moe_layers=min(layers, dims.moe_layers))


def stage_parameters(
    dims: ModelDims, stage: StageLayers, tensor_parallel: int, expert_parallel: int
) -> tuple[float, float]:
    """(dense, expert) parameters one GPU of the largest stage holds (embedding or output included)."""
    dense_layer = dims.attention_params + 2 * dims.hidden
    dense = stage.dense_layers * (dense_layer + dims.dense_mlp_params)
    dense += stage.moe_layers * (dense_layer + dims.router_params + dims.shared_experts * dims.expert_params)
    dense += max(dims.embedding_params, dims.output_params)  # stage 0 or the last stage (tied: a copy)
    expert = stage.moe_layers * dims.experts / expert_parallel * dims.expert_params
    return dense / tensor_parallel, expert / tensor_parallel


@dataclass(frozen=True, slots=True)
class CommSizes:
    """Bytes of the collectives one GPU issues, per layer and micro-batch unless noted
    (sizes as nccl-tests defines them: all-gather/reduce-scatter = the full gathered buffer)."""

    tensor_bytes: float  # each TP all-reduce, or each SP all-gather / reduce-scatter
    context_kv_bytes: float  # all-gather of K and V over the context-parallel group
    expert_bytes: float  # each EP all-to-all (dispatch or combine)
    pipeline_bytes: float  # each stage-to-stage send/recv
    dense_grad_bytes: float  # per step: gradients reduced over the data-parallel group
    expert_grad_bytes: float  # per step: expert gradients over the expert-data-parallel group


def comm_sizes(
    dims: ModelDims, layout: ParallelLayout, seq_len: int, grad_bytes: tuple[float, float, float]
) -> CommSizes:
    """Message sizes of every collective of a step; ``grad_bytes`` = (dense params, expert params,
    bytes per gradient) for the GPU's largest stage."""
    t = layout.tensor_parallel
    tokens = layout.micro_batch_size * seq_len / layout.context_parallel
    hidden_bytes = 2.0 * tokens * dims.hidden
    kv_width = (dims.heads if dims.mla else dims.kv_heads) * (dims.qk_head_dim + dims.v_head_dim)
    # Megatron-LM's scatter/gather optimisation (SC'21 sec. 4.1): each tensor-parallel rank sends 1/t of
    # the boundary activation between stages (with sequence parallelism it only holds 1/t anyway)
    scatter = t
    dense_params, expert_params, per_grad = grad_bytes
    return CommSizes(
        tensor_bytes=hidden_bytes if t > 1 else 0.0,
        context_kv_bytes=2.0 * seq_len * layout.micro_batch_size * kv_width / t if layout.context_parallel > 1 else 0.0,
        expert_bytes=hidden_bytes * dims.experts_per_token / (t if layout.sequence_parallel else 1)
        if layout.expert_parallel > 1
        else 0.0,
        pipeline_bytes=hidden_bytes / scatter if layout.pipeline_parallel > 1 else 0.0,
        dense_grad_bytes=dense_params * per_grad if layout.data_parallel > 1 else 0.0,
        expert_grad_bytes=expert_params * per_grad if layout.data_parallel // layout.expert_parallel > 1 else 0.0,
    )
