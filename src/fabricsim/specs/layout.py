"""A parallel layout: how one model is sharded over GPUs (layer L1).

A frozen slotted dataclass because the planner builds millions of them. Glossary: tp = tensor,
pp = pipeline, dp = data, cp = context, ep = expert parallel; vpp = virtual pipeline stages per rank.
Expert layers are folded over the same GPUs (Megatron-Core's MoE parallel folding, Liu et al.
2025, arXiv 2504.14960): attention uses tp x cp x dp x pp, the experts etp x ep x edp x pp with
``etp * ep * edp = tp * cp * dp``, so ``gpus = tp * pp * cp * dp`` and ``etp * ep`` must divide
``tp * cp * dp`` (the expert-parallel group may span tensor-, context- and data-parallel ranks).
``expert_tensor_parallel`` None means "the tensor-parallel size" (Megatron-Core's default).
"""

from dataclasses import dataclass, fields
from enum import Enum
from operator import attrgetter


class Recompute(str, Enum):
    """Activation recomputation, as Megatron-Core offers it.

    ``selective``: ``--recompute-granularity selective`` with the default ``--recompute-modules
    core_attn`` (Korthikanti et al. 2022). ``fine-grained``: ``--recompute-granularity selective
    --recompute-modules layernorm mla_up_proj moe_act`` (output-discarding recomputation of the
    norms, the MLA up-projections and the expert activation; Megatron-Core >= 0.13, MoE README
    "Fine-grained Recomputation"). ``full``: ``--recompute-granularity full`` (every layer).
    """

    NONE = "none"
    SELECTIVE = "selective"
    FINE_GRAINED = "fine-grained"
    FULL = "full"


# Megatron-Core ``--recompute-modules`` (selective granularity) that fabricsim models: the core
# attention, the two norms, MLA's up-projections, the routed experts' activation, a dense layer's
# whole MLP (``mlp`` skips MoE layers, transformer_layer.py) and an MoE layer's shared experts.
RECOMPUTE_MODULES = ("core_attn", "layernorm", "mla_up_proj", "moe_act", "mlp", "shared_experts")
SELECTIVE_MODULES = frozenset({"core_attn"})  # Megatron-Core's default list
FINE_GRAINED_MODULES = frozenset({"layernorm", "mla_up_proj", "moe_act"})


def recompute_modules(recompute: Recompute, modules: frozenset[str] | None = None) -> frozenset[str]:
    """The modules a layer recomputes: ``modules`` (or Megatron-Core's default) under selective
    recomputation, the fine-grained preset's, none otherwise (full recomputation rebuilds the
    whole layer and is handled apart)."""
    if recompute is Recompute.SELECTIVE:
        return modules or SELECTIVE_MODULES
    return FINE_GRAINED_MODULES if recompute is Recompute.FINE_GRAINED else frozenset()


class _Memo:
    """A layout's JSON pairs and view, kept on the layout once built (not a field: equality, hashing, copies
    and pickles ignore it). Layouts are shared values (one per distinct tuple of an ``api.train``
    caller, :func:`fabricsim.workload.training.resolve_checked_layout`), so each builds them once."""

    __slots__ = ("_pairs", "_view")


@dataclass(frozen=True, slots=True)
class ParallelLayout(_Memo):
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    context_parallel: int = 1
    expert_parallel: int = 1
    virtual_stages: int = 1
    micro_batch_size: int = 1
    zero_stage: int = 0
    recompute: Recompute = Recompute.NONE
    sequence_parallel: bool = False
    dtype: str = "bf16"
    expert_tensor_parallel: int | None = None

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.pipeline_parallel * self.data_parallel * self.context_parallel

    def __post_init__(self) -> None:
        if self.expert_tensor_parallel is not None and self.expert_tensor_parallel == self.tensor_parallel:
            object.__setattr__(self, "expert_tensor_parallel", None)  # one spelling of "expert TP = TP"

    @property
    def expert_tp(self) -> int:
        """Expert tensor-parallel size (the tensor-parallel size unless set)."""
        etp = self.expert_tensor_parallel
        return self.tensor_parallel if etp is None else etp

    @property
    def data_context_parallel(self) -> int:
        """dp x cp: the ranks of a stage that hold the same (non-expert) weights. Megatron-Core
        reduces their gradients and its distributed optimizer shards their state over this group,
        the data-parallel group *with* context parallelism (``get_data_parallel_group(
        with_context_parallel=True)``: DistributedDataParallel's gradient buffers use
        ``intra_dp_cp_group``, distributed_data_parallel.py:289, and the distributed optimizer is
        built on ``dp_cp_group``, optimizer/__init__.py:1141, NVIDIA/Megatron-LM @ d98e8a6); ZeRO
        stages shard over it. Its ranks stride tp (order tp-cp-dp-pp)."""
        return self.data_parallel * self.context_parallel

    @property
    def expert_data_parallel(self) -> int:
        """Replicas of each expert: tp*cp*dp / (etp*ep) (Megatron-Core parallel folding)."""
        ranks = self.tensor_parallel * self.context_parallel * self.data_parallel
        return max(1, ranks // (self.expert_tp * self.expert_parallel))

    def as_dict(self) -> dict[str, object]:
        """Plain-JSON view with the short names the CLI uses (:data:`SHORT_NAMES`): a new dict,
        copied from one kept on the layout (:class:`_Memo`; a dict copies faster than pairs)."""
        try:
            return self._view.copy()
        except AttributeError:
            pass
        view = dict(self.pairs())
        object.__setattr__(self, "_view", view)
        return view.copy()

    def pairs(self) -> tuple[tuple[str, object], ...]:
        """:meth:`as_dict` as (short name, value) pairs, in field order (a result's ``layout``),
        built once per layout object (:class:`_Memo`; every value is immutable)."""
        try:
            return self._pairs
        except AttributeError:
            pass
        # flat immutable fields: asdict without its copies (names listed once: a hot path); the last
        # field is expert_tensor_parallel, shown resolved (tp unless set)
        *values, _ = _FIELD_VALUES(self)
        values[_RECOMPUTE] = self.recompute.value
        values.append(self.expert_tp)
        pairs = tuple(zip(_SHORT_NAMES, values, strict=True))
        object.__setattr__(self, "_pairs", pairs)
        return pairs


SHORT_NAMES: dict[str, str] = {
    "tensor_parallel": "tp",
    "pipeline_parallel": "pp",
    "data_parallel": "dp",
    "context_parallel": "cp",
    "expert_parallel": "ep",
    "virtual_stages": "vpp",
    "micro_batch_size": "micro_batch",
    "zero_stage": "zero",
    "recompute": "recompute",
    "sequence_parallel": "sequence_parallel",
    "dtype": "dtype",
    "expert_tensor_parallel": "expert_tp",
}
"""The ONE map between a layout field's full name and its short (CLI / JSON) name."""

_FIELD_SHORT_NAMES = tuple((f.name, SHORT_NAMES[f.name]) for f in fields(ParallelLayout))
_SHORT_NAMES = tuple(short for _, short in _FIELD_SHORT_NAMES)
_FIELD_VALUES = attrgetter(*(name for name, _ in _FIELD_SHORT_NAMES))  # a layout's field values, in order
_RECOMPUTE = _SHORT_NAMES.index("recompute")
assert _SHORT_NAMES[-1] == "expert_tp"  # ParallelLayout.pairs resolves it last

LONG_NAMES: dict[str, str] = {short: full for full, short in SHORT_NAMES.items()}


def long_names(values: dict[str, object]) -> dict[str, object]:
    """``{"tp": 8}`` -> ``{"tensor_parallel": 8}`` (keys already long are kept)."""
    return {LONG_NAMES.get(key, key): value for key, value in values.items()}
