"""A training iteration as work: layout checks, stages, and the communication it issues (layer L5).

Rank order (documented contract with ``collectives.place_group``): the tensor-parallel rank varies
fastest, then context, then data, then pipeline -- GPU ``g = tp_rank + tp·(cp_rank + cp·(dp_rank +
dp·pp_rank))`` (Megatron-LM's default order). So tensor-parallel groups are contiguous (inside
the NVLink domain first), context groups have stride tp, data groups stride tp·cp and pipeline
neighbours stride tp·cp·dp. Expert layers fold over the same tp·cp·dp ranks of a stage in
Megatron-Core's expert order (expert TP fastest, then EP, then expert-DP; parallel folding, Liu et
al. 2025, arXiv 2504.14960): expert-tensor groups are contiguous, expert-parallel groups stride
etp, expert-data-parallel groups stride etp·ep. With etp = tp and ep dividing dp this is the
classic "EP inside DP" layout; with etp = 1 an EP group may span the tensor-parallel ranks too.

Stages: layers are split over ``pp·vpp`` model chunks; when they do not divide evenly the first
chunks take one extra layer and the step is paced by the largest stage (ceil(L/pp) layers).
Stage 0 also holds the input embedding, the last stage the output layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from fabricsim.errors import FabricsimError
from fabricsim.specs import RECOMPUTE_MODULES, ParallelLayout, Recompute
from fabricsim.transformer.compute import CROSS_ENTROPY_IMPLS
from fabricsim.transformer.flops import ModelDims
from fabricsim.workload.pipeline_layout import check_layout_chunks, parse_layout, rank_layers

DTYPES = ("bf16", "fp16", "fp8", "fp4")  # fp4: NVFP4 recipe on Blackwell
# Megatron-Core ``--fp8-recipe``: delayed (per-tensor, amax history), tensorwise (per-tensor, current
# scaling; "current" here), blockwise (DeepSeek-V3's 1x128 / 128x128 blocks; "block"), mxfp8
# (Blackwell MX, 1x32 blocks with E8M0 scales); nvfp4 for fp4 runs.
FP8_RECIPES = ("delayed", "current", "block", "mxfp8", "nvfp4")  # transformer.kernels.RECIPE_FORMAT
# Megatron-Core token dispatchers: alltoall (NCCL all-to-all, the default) and DeepEP
# (``--moe-token-dispatcher-type flex --moe-enable-deepep``).
MOE_DISPATCHERS = ("alltoall", "deepep")
MAX_MTP_LAYERS = 8  # multi-token prediction depth (DeepSeek-V3 trains with 1)


class PipelineSplit(NamedTuple):
    """How layers split over the pipeline's model chunks: Megatron-Core's equal chunks, with the
    embedding / the loss counted as a layer (``--account-for-*-in-pipeline-split``), or an explicit
    layout's chunks (``--pipeline-model-parallel-layout``, :mod:`fabricsim.workload.pipeline_layout`)."""

    embedding: bool = False
    loss: bool = False
    chunks: tuple[str, ...] = ()

    @property
    def accounted(self) -> int:
        """Parts counted as layers by the equal-chunk rule."""
        return int(self.embedding) + int(self.loss)


@dataclass(frozen=True, slots=True)
class TrainingOptions:
    """How the framework runs the step, beyond the layout. Defaults follow Megatron-Core's
    (megatron/training/arguments.py, 2025): every overlap is opt-in there.

    ``flash_attention``: fused attention (no s x s scores in HBM; Megatron-Core's
    ``--attention-backend auto`` picks a fused kernel); off reproduces Megatron-LM 2021-22.
    ``overlap_grad_reduce``: data-parallel gradient reduction in buckets overlapped with backward
    (``--overlap-grad-reduce``, default off). ``overlap_param_gather``: the ZeRO/distributed-optimizer
    all-gather of updated parameters overlapped with the next forward (``--overlap-param-gather``,
    default off). ``overlap_tp_comm``: tensor-parallel collectives hidden behind GEMMs
    (``--tp-comm-overlap``, Transformer Engine userbuffers, which need the TP group inside one NVLink
    domain; default off). ``a2a_overlap``: the expert-parallel all-to-all of one micro-batch hidden
    behind the other's compute in the 1F1B steady state (``--overlap-moe-expert-parallel-comm``,
    DualPipe-style; default off). ``fp8_recipe``: the scaling recipe of FP8/FP4 training
    (:data:`FP8_RECIPES`; None = delayed, Megatron-Core's default): selects the GEMM format and the
    quantisation kernels' cost in the compute model. ``capacity_factor``: None is dropless
    (Megatron-Core's default); a number c drops tokens beyond c x the mean expert load and pads every
    expert to it (``--moe-expert-capacity-factor c --moe-pad-expert-input-to-capacity``), so expert
    GEMMs and dispatch carry c x the mean (c < 1 would drop work the model FLOPs still count, so it
    is refused). ``moe_dispatcher``: :data:`MOE_DISPATCHERS` (default alltoall, as Megatron-Core);
    deepep sends a token once per remote NVLink domain (:mod:`fabricsim.collectives.dispatch`).
    ``cross_entropy``: the loss kernels (:data:`~fabricsim.transformer.compute.CROSS_ENTROPY_IMPLS`):
    unfused (Megatron-Core's default, ``--cross-entropy-loss-fusion`` off), native
    (``--cross-entropy-loss-fusion``) or te (``--cross-entropy-fusion-impl te``). ``mtp_layers``:
    multi-token prediction depth (``--mtp-num-layers``, default 0 as Megatron-Core; DeepSeek-V3
    recipes use 1): each depth adds on the last pipeline stage a projection of 2h -> h, one more
    transformer layer of the model's kind and the output layer and loss again
    (:func:`fabricsim.transformer.flops.mtp_forward_flops`). ``account_for_embedding`` /
    ``account_for_loss``: Megatron-Core's ``--account-for-embedding-in-pipeline-split`` /
    ``--account-for-loss-in-pipeline-split`` (default off): the embedding / the output layer and
    loss count as one layer when the layers are split into pp x vpp equal chunks, so the first /
    last chunk holds one transformer layer fewer (:func:`largest_stage`). ``grad_reduce_in_fp32``:
    the data-parallel gradient buffer (accumulated over micro-batches, reduced over data parallel)
    in fp32, or in the parameters' 16-bit dtype (Megatron-Core's DDP ``grad_reduce_in_fp32``;
    Megatron-LM ``--accumulate-allreduce-grads-in-fp32`` / ``--grad-reduce-in-bf16``). None is
    Megatron-LM's default for the dtype (megatron/training/arguments.py): fp32 for bf16 parameters
    (bf16 runs and FP8/FP4 recipes), fp16 for fp16 runs (:meth:`gradient_bytes`). ``pipeline_layout``:
    Megatron-Core's ``--pipeline-model-parallel-layout`` string (:mod:`fabricsim.workload.pipeline_layout`;
    None: equal chunks), exclusive with the accounting flags. ``recompute_modules``: what selective
    recomputation rebuilds (Megatron-Core ``--recompute-modules``; :data:`fabricsim.specs.RECOMPUTE_MODULES`;
    None: its default, core_attn); it applies to layouts with ``recompute`` selective.
    ``lora_rank``: LoRA fine-tuning (Hu et al. 2021, arXiv 2106.09685) with adapters of this rank on
    the attention projections (QKV and output, NeMo's ``target_modules: ['attention']``, the MLPerf
    Training llama2_70b_lora setting) and every base weight frozen: backward computes the activation
    gradients only (no weight-gradient GEMMs), and gradients, their data-parallel reduction and the
    optimizer cover the adapters only (:func:`lora_stage_parameters`);
    0 (default) trains every weight.
    """

    flash_attention: bool = True
    overlap_grad_reduce: bool = False
    overlap_tp_comm: bool = False
    overlap_param_gather: bool = False
    a2a_overlap: bool = False
    fp8_recipe: str | None = None  # None: delayed, Megatron-Core's default
    capacity_factor: float | None = None
    moe_dispatcher: str = "alltoall"
    cross_entropy: str = "unfused"
    mtp_layers: int = 0
    account_for_embedding: bool = False
    account_for_loss: bool = False
    grad_reduce_in_fp32: bool | None = None
    pipeline_layout: str | None = None
    recompute_modules: tuple[str, ...] | None = None
    lora_rank: int = 0

    @property
    def selective_modules(self) -> frozenset[str] | None:
        """The modules selective recomputation rebuilds (None: Megatron-Core's default, core_attn)."""
        return frozenset(self.recompute_modules) if self.recompute_modules else None

    def gradients_in_fp32(self, dtype: str) -> bool:
        """Whether a run in ``dtype`` keeps and reduces fp32 gradients (class docstring)."""
        return self.grad_reduce_in_fp32 if self.grad_reduce_in_fp32 is not None else dtype != "fp16"

    def gradient_bytes(self, dtype: str) -> float:
        """Bytes per gradient of a run in ``dtype``: 4 (fp32) or 2 (16-bit)."""
        return 4.0 if self.gradients_in_fp32(dtype) else 2.0

    @property
    def pipeline_accounting(self) -> PipelineSplit:
        """How layers split over pipeline chunks (:class:`PipelineSplit`)."""
        chunks = parse_layout(self.pipeline_layout) if self.pipeline_layout else ()
        return PipelineSplit(self.account_for_embedding, self.account_for_loss, chunks)

    @property
    def frozen_base(self) -> bool:
        """Whether the base weights are frozen (LoRA fine-tuning, ``lora_rank`` > 0)."""
        return self.lora_rank > 0

    def __post_init__(self) -> None:
        if self.fp8_recipe is not None and self.fp8_recipe not in FP8_RECIPES:
            raise FabricsimError(
                "fp8_recipe", f"unknown FP8 recipe {self.fp8_recipe!r}", f"use one of {', '.join(FP8_RECIPES)}"
            )

    def as_dict(self, dtype: str | None = None) -> dict[str, object]:
        """JSON view with the CLI's names (``grad_reduce_in_fp32`` resolved for ``dtype`` when given)."""
        return {
            "flash_attention": self.flash_attention,
            "overlap_grad_reduce": self.overlap_grad_reduce,
            "overlap_param_gather": self.overlap_param_gather,
            "tp_comm_overlap": self.overlap_tp_comm,
            "a2a_overlap": self.a2a_overlap,
            "fp8_recipe": self.fp8_recipe or "delayed",
            "capacity_factor": self.capacity_factor,
            "moe_dispatcher": self.moe_dispatcher,
            "cross_entropy": self.cross_entropy,
            "mtp_layers": self.mtp_layers,
            "account_for_embedding_in_pipeline_split": self.account_for_embedding,
            "account_for_loss_in_pipeline_split": self.account_for_loss,
            "grad_reduce_in_fp32": self.grad_reduce_in_fp32 if dtype is None else self.gradients_in_fp32(dtype),
            "pipeline_layout": self.pipeline_layout,
            "recompute_modules": list(self.recompute_modules) if self.recompute_modules else None,
            "lora_rank": self.lora_rank,
        }

    def validate(self) -> None:
        """Raise :class:`FabricsimError` naming the option for a bad value (the recipe is checked at
        construction, :meth:`__post_init__`)."""
        if self.moe_dispatcher not in MOE_DISPATCHERS:
            problem = f"unknown dispatcher {self.moe_dispatcher!r}"
            raise FabricsimError("moe-dispatcher", problem, f"use {' | '.join(MOE_DISPATCHERS)}")
        if self.cross_entropy not in CROSS_ENTROPY_IMPLS:
            problem = f"unknown implementation {self.cross_entropy!r}"
            raise FabricsimError("cross-entropy", problem, f"use {' | '.join(CROSS_ENTROPY_IMPLS)}")
        rank = self.lora_rank
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise FabricsimError("lora-rank", f"must be a whole number >= 0, got {rank!r}", "e.g. 16 (0: all weights)")
        mtp = self.mtp_layers
        if isinstance(mtp, bool) or not isinstance(mtp, int) or not 0 <= mtp <= MAX_MTP_LAYERS:
            raise FabricsimError("mtp-layers", f"must be an integer in [0, {MAX_MTP_LAYERS}], got {mtp!r}")
        if self.recompute_modules is not None:
            unknown = sorted(set(self.recompute_modules) - set(RECOMPUTE_MODULES))
            if unknown or not self.recompute_modules:
                problem = f"unknown module(s) {', '.join(unknown)}" if unknown else "empty list"
                raise FabricsimError("recompute-modules", problem, f"use {','.join(RECOMPUTE_MODULES)}")
        if self.pipeline_layout is not None:
            if not isinstance(self.pipeline_layout, str):
                raise FabricsimError("pipeline-layout", f"must be a string, got {self.pipeline_layout!r}")
            if self.account_for_embedding or self.account_for_loss:
                raise FabricsimError(
                    "pipeline-layout", "a layout places the embedding and the loss itself",
                    "drop --account-for-*-in-pipeline-split",
                )
            parse_layout(self.pipeline_layout)
        cf = self.capacity_factor
        if cf is not None and (isinstance(cf, bool) or not isinstance(cf, (int, float)) or not 1.0 <= cf <= 64.0):
            raise FabricsimError("capacity-factor", f"must be a number in [1, 64], got {cf!r}", "or omit it (dropless)")


def check_dtype(dtype: str) -> None:
    """Raise :class:`FabricsimError` unless ``dtype`` is a training dtype (:data:`DTYPES`)."""
    if dtype not in DTYPES:
        raise FabricsimError("dtype", f"unsupported training dtype {dtype!r}", "use " + ", ".join(DTYPES))


def _divides(field: str, value: int, total: int, what: str) -> None:
    if total % value:
        raise FabricsimError(field, f"{value} does not divide {what} ({total})", f"use a divisor of {total}")


def check_layout(
    dims: ModelDims,
    layout: ParallelLayout,
    gpus: int | None,
    global_batch: int,
    seq_len: int,
    accounting: PipelineSplit = PipelineSplit(),
    mtp_layers: int = 0,
) -> int:
    """Raise :class:`FabricsimError` naming the field for an impossible layout; return micro-batches per step.

    The ONE home of the training layout rules that relate fields to each other and to the model
    (divisibility, products, dtype). Each field's own type and range (a positive degree, a ZeRO
    stage, a recompute mode) is checked once at the edge by :mod:`fabricsim.specs.inputs`; the
    planner builds only such layouts, so this function trusts them. ``gpus`` None: the layout's own
    GPU count (the analytic engine's case: no product to check).

    A hot path of every estimate: each rule is tested inline and a helper builds the error only
    when one fails."""
    tp, pp, dp, cp = layout.tensor_parallel, layout.pipeline_parallel, layout.data_parallel, layout.context_parallel
    ep, vpp, mb = layout.expert_parallel, layout.virtual_stages, layout.micro_batch_size
    if layout.dtype not in DTYPES:
        check_dtype(layout.dtype)
    if gpus is not None and tp * pp * dp * cp != gpus:
        _check_product(layout, gpus)
    if dims.heads % tp or dims.hidden % tp or (dims.kv_heads % tp and tp % dims.kv_heads):
        _check_tensor_parallel(dims, tp)
    if accounting.chunks:
        check_layout_chunks(accounting.chunks, dims.layers, pp, vpp, mtp_layers)
    elif accounting.embedding or accounting.loss:
        # Megatron-Core's get_num_layers_to_build: equal chunks of layers + accounted parts
        accounted = accounting.accounted
        units = dims.layers + accounted
        if units % (pp * vpp):
            raise FabricsimError(
                "pp",
                f"{dims.layers} layers + {accounted} accounted (embedding/loss) = {units} do not split into "
                f"pp*vpp = {pp * vpp} equal chunks",
                "choose pp and vpp whose product divides them",
            )
    elif pp * vpp > dims.layers:
        raise FabricsimError("pp", f"pp*vpp = {pp * vpp} exceeds the {dims.layers} layers", "use fewer pipeline stages")
    if ep > 1 or layout.expert_tensor_parallel not in (None, tp):
        _check_expert_parallel(dims, layout)
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


def _check_expert_parallel(dims: ModelDims, layout: ParallelLayout) -> None:
    """Megatron-Core parallel folding: etp*ep divides tp*cp*dp (arXiv 2504.14960, sec. 3)."""
    ep, etp = layout.expert_parallel, layout.expert_tp
    if not dims.experts:
        field = "ep" if ep > 1 else "expert-tp"
        raise FabricsimError(field, "expert parallelism needs an MoE model", f"drop --{field} for a dense model")
    _divides("ep", ep, dims.experts, "the experts")
    _divides("expert-tp", etp, dims.expert_ffn, "the expert FFN size")
    ranks = layout.tensor_parallel * layout.context_parallel * layout.data_parallel
    if ranks % (ep * etp):
        raise FabricsimError(
            "ep",
            f"expert-tp x ep = {etp * ep} does not divide tp x cp x dp = {ranks}",
            "use a smaller --ep or --expert-tp 1 (the expert group may span the tensor-parallel ranks)",
        )


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
    if dims.experts:  # a dense model keeps what was given (None: ParallelLayout's default)
        values["expert_tensor_parallel"] = default_expert_tp(dims, values)
    values.setdefault("sequence_parallel", tp > 1)  # type: ignore[operator]
    recompute = values.get("recompute", Recompute.NONE)
    values["recompute"] = recompute if type(recompute) is Recompute else Recompute(recompute)
    layout = ParallelLayout(**values)  # type: ignore[arg-type]
    _check_product(layout, gpus)
    return layout


# Layouts of checked arguments, one per distinct (gpus, experts?, degrees, ...) tuple: the frozen
# dataclass's constructor and the defaults above were a tenth of an in-process ``api.train``
# (issue 27). Layouts are frozen values, so sharing one between results is safe. Bounded.
_LAYOUTS: dict[tuple, ParallelLayout] = {}
LAYOUTS_KEPT = 4096
_LAYOUT_KEYWORDS = (
    "tensor_parallel", "pipeline_parallel", "data_parallel", "context_parallel", "expert_parallel", "virtual_stages",
    "micro_batch_size", "zero_stage", "recompute", "sequence_parallel", "dtype", "expert_tensor_parallel",
)


def resolve_checked_layout(gpus: int, dims: ModelDims, values: tuple) -> ParallelLayout:
    """:func:`resolve_layout` of ``values`` (tp, pp, dp, cp, ep, vpp, micro-batch, ZeRO, recompute,
    sequence parallel, dtype, expert TP, in that order; None = unset), built once per distinct
    (``gpus``, MoE or not, ``values``). The values must be checked at the edge already
    (:mod:`fabricsim.specs.inputs`: ints are ``int``, switches ``bool``), so that equal keys are
    the same layout (``True == 1`` would otherwise share one). A refusal is not kept."""
    key = (gpus, dims.experts > 0, values)
    layout = _LAYOUTS.get(key)
    if layout is None:
        layout = resolve_layout(gpus, dims, **dict(zip(_LAYOUT_KEYWORDS, values, strict=True)))
        if len(_LAYOUTS) >= LAYOUTS_KEPT:
            _LAYOUTS.clear()
        _LAYOUTS[key] = layout
    return layout


def default_expert_tp(dims: ModelDims, values: dict[str, object]) -> int | None:
    """The expert tensor-parallel size when unset: Megatron-Core's default (= tp) where the expert
    group fits in tp*cp*dp, else 1 (parallel folding: the expert-parallel group spans the
    tensor-parallel ranks, as NVIDIA's DeepSeek-V3 recipes set ``--expert-tensor-parallel-size 1``).
    Dense models keep None."""
    given = values.get("expert_tensor_parallel")
    if given is not None or not dims.experts:
        return given  # type: ignore[return-value]
    keys = ("tensor_parallel", "context_parallel", "data_parallel", "expert_parallel")
    tp, cp, dp, ep = (values.get(k, 1) for k in keys)
    if not all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (tp, cp, dp, ep)):
        return None
    return tp if (tp * cp * dp) % (tp * ep) == 0 else 1  # type: ignore[operator, return-value]


@dataclass(frozen=True, slots=True)
class StageLayers:
    """Layers of the largest pipeline stage, split into dense and MoE (worst case: MoE first)."""

    layers: int
    moe_layers: int

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers


def largest_stage(dims: ModelDims, pipeline_parallel: int, accounting: PipelineSplit = PipelineSplit()) -> StageLayers:
    """The stage with the most layers, holding as many MoE layers as there are: ceil(L/pp) layers,
    or with pipeline-split accounting (embedding, loss) (L + accounted)/pp on a middle stage and one
    fewer on the first / last stage, or the most a rank of an explicit layout holds."""
    return _stage_layers(dims, max(_end_stage_layers(dims, pipeline_parallel, accounting)))


def last_stage_layers(dims: ModelDims, pipeline_parallel: int, accounting: PipelineSplit = PipelineSplit()) -> int:
    """Transformer layers on the last pipeline stage (the one holding the output layer)."""
    return _end_stage_layers(dims, pipeline_parallel, accounting)[-1]


def _end_stage_layers(dims: ModelDims, pp: int, accounting: PipelineSplit) -> tuple[int, ...]:
    """Layers of (the largest middle stage, the first, the last) -- without accounting (ceil(L/pp), ceil, floor)."""
    if accounting.chunks:
        ranks = rank_layers(accounting.chunks, pp)
        return max(ranks[1:-1], default=0), ranks[0], ranks[-1]
    if not accounting.accounted:
        return -(-dims.layers // pp), -(-dims.layers // pp), dims.layers // pp
    per_stage = (dims.layers + accounting.accounted) // pp
    if pp == 1:
        return dims.layers, dims.layers, dims.layers
    first, last = per_stage - accounting.embedding, per_stage - accounting.loss
    return (per_stage if pp > 2 else 0), first, last


def _stage_layers(dims: ModelDims, layers: int) -> StageLayers:
    return StageLayers(layers=layers, moe_layers=min(layers, dims.moe_layers))


def stage_parameters(
    dims: ModelDims, stage: StageLayers, tensor_parallel: int, expert_parallel: int, expert_tp: int | None = None
) -> tuple[float, float]:
    """(dense, expert) parameters one GPU of the largest stage holds (embedding or output included);
    experts are split over ep and expert TP (default: the tensor-parallel size)."""
    dense_layer = dims.attention_params + 2 * dims.hidden
    dense = stage.dense_layers * (dense_layer + dims.dense_mlp_params)
    dense += stage.moe_layers * (dense_layer + dims.router_params + dims.shared_experts * dims.expert_params)
    dense += max(dims.embedding_params, dims.output_params)  # stage 0 or the last stage (tied: a copy)
    expert = stage.moe_layers * dims.experts / expert_parallel * dims.expert_params
    return dense / tensor_parallel, expert / (tensor_parallel if expert_tp is None else expert_tp)


def check_lora(dims: ModelDims, rank: int) -> int:
    """``rank`` if LoRA adapters of that rank fit the model (raise ``FabricsimError`` naming ``--lora-rank``)."""
    if rank and dims.mla:
        raise FabricsimError("lora-rank", "LoRA on multi-head latent attention is not modelled", "drop --lora-rank")
    if rank > dims.hidden:  # an adapter wider than the layer it adapts is no low-rank adapter
        raise FabricsimError("lora-rank", f"must be at most the hidden size {dims.hidden}, got {rank}", "e.g. 16")
    return rank


def lora_stage_parameters(dims: ModelDims, stage: StageLayers, tensor_parallel: int, rank: int) -> float:
    """Trainable (adapter) parameters one GPU of the largest stage holds under LoRA of ``rank`` on the
    attention projections: per layer A (rank x in) and B (out x rank) for QKV (h -> (heads + 2 kv_heads)
    x head_dim) and for the output projection (heads x v_head_dim -> h), split over tensor parallelism
    as the projections they adapt (Hu et al. 2021, arXiv 2106.09685; NeMo ``LoraKQVAdapter`` /
    ``LoraDenseAttentionAdapter``). Multi-head latent attention is not supported (refused upstream)."""
    qkv_out = (dims.heads + 2 * dims.kv_heads) * dims.qk_head_dim
    per_layer = rank * (dims.hidden + qkv_out) + rank * (dims.heads * dims.v_head_dim + dims.hidden)
    return stage.layers * per_layer / tensor_parallel


@dataclass(frozen=True, slots=True)
class CommSizes:
    """Bytes of the collectives one GPU issues, per layer and micro-batch unless noted
    (sizes as nccl-tests defines them: all-gather/reduce-scatter = the full gathered buffer)."""

    tensor_bytes: float  # each TP all-reduce, or each SP all-gather / reduce-scatter
    context_kv_bytes: float  # all-gather of K and V over the context-parallel group
    expert_bytes: float  # each EP all-to-all (dispatch or combine)
    expert_tp_bytes: float  # each expert-TP all-gather (after dispatch) or reduce-scatter (before combine)
    pipeline_bytes: float  # each stage-to-stage send/recv
    dense_grad_bytes: float  # per step: gradients reduced over the dp x cp ranks that share the weights
    expert_grad_bytes: float  # per step: expert gradients over the expert-data-parallel group


def comm_sizes(
    dims: ModelDims,
    layout: ParallelLayout,
    seq_len: int,
    grad_bytes: tuple[float, float, float],
    capacity_factor: float | None = None,
) -> CommSizes:
    """Message sizes of every collective of a step; ``grad_bytes`` = (dense params, expert params,
    bytes per gradient) for the GPU's largest stage.

    Expert dispatch (Megatron-Core's alltoall dispatcher): each rank sends its tokens (1/t of them
    under sequence parallelism) once per chosen expert, k x h 16-bit values per token (x the
    capacity factor when experts are padded to capacity), over the ep ranks; with expert TP > 1 the
    received tokens are then all-gathered over the expert-TP group (reduce-scattered before combine).
    """
    t = layout.tensor_parallel
    tokens = layout.micro_batch_size * seq_len / layout.context_parallel
    hidden_bytes = 2.0 * tokens * dims.hidden
    kv_width = (dims.heads if dims.mla else dims.kv_heads) * (dims.qk_head_dim + dims.v_head_dim)
    # Megatron-LM's scatter/gather optimisation (SC'21 sec. 4.1): each tensor-parallel rank sends 1/t of
    # the boundary activation between stages (with sequence parallelism it only holds 1/t anyway)
    scatter = t
    dense_params, expert_params, per_grad = grad_bytes
    dispatched = hidden_bytes * dims.experts_per_token * (capacity_factor or 1.0)
    dispatched /= t if layout.sequence_parallel else 1
    etp = layout.expert_tp
    return CommSizes(
        tensor_bytes=hidden_bytes if t > 1 else 0.0,
        context_kv_bytes=2.0 * seq_len * layout.micro_batch_size * kv_width / t if layout.context_parallel > 1 else 0.0,
        expert_bytes=dispatched if layout.expert_parallel > 1 and dims.experts else 0.0,
        expert_tp_bytes=dispatched * etp if etp > 1 and dims.experts else 0.0,
        pipeline_bytes=hidden_bytes / scatter if layout.pipeline_parallel > 1 else 0.0,
        dense_grad_bytes=dense_params * per_grad if layout.data_context_parallel > 1 else 0.0,
        expert_grad_bytes=expert_params * per_grad if layout.expert_data_parallel > 1 else 0.0,
    )
