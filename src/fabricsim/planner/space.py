"""The space of training layouts a plan searches, and its divisibility rules (layer L8).

A :class:`TrainSpace` names the values allowed per dimension (``None``: every value the model,
the GPU count, the batch and the sequence allow). :func:`train_groups` walks the valid part of
the space as *groups* -- layouts sharing (tp, pp, cp, ep, dtype, sequence parallel, recompute) --
and gives per group the micro-batch sizes (ascending, so memory grows along them) and, per
micro-batch size, the (ZeRO stage, virtual stages) variants. Divisibility is settled here, before
anything is costed:

* tp divides the GPUs, the attention heads and the hidden size (and matches the KV heads);
* pp divides gpus/tp and is at most the layer count; cp divides gpus/(tp·pp) and the sequence;
  dp = gpus/(tp·pp·cp) divides the global batch; expert TP etp (unconstrained: 1 and tp) divides
  the expert FFN, and ep divides the experts with etp·ep dividing tp·cp·dp (Megatron-Core's
  parallel folding; MoE only);
* the micro-batch divides global_batch/dp;
* interleaving (vpp > 1) needs pp > 1, layers divisible by pp·vpp (Megatron-LM's rule) and the
  micro-batch count divisible by pp; with pipeline-split accounting the layers + accounted
  embedding/loss must divide into pp (and pp·vpp) equal chunks instead;
* redundant layouts are skipped: sequence parallelism needs tp > 1 and ZeRO stages need dp·cp > 1
  (ZeRO shards over the dp·cp ranks that share the weights; with dp·cp = 1 every stage is the
  same layout as stage 0).

Order is canonical (ascending values, :data:`RECOMPUTE_ORDER`), so searches are deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fabricsim.errors import FabricsimError
from fabricsim.specs import Dtype, ParallelLayout, Recompute, SystemSpec
from fabricsim.specs.inputs import ZERO_STAGES
from fabricsim.specs.layout import LONG_NAMES
from fabricsim.transformer.flops import ModelDims
from fabricsim.workload.training import DTYPES, check_dtype

RECOMPUTE_ORDER = (Recompute.NONE, Recompute.SELECTIVE, Recompute.FINE_GRAINED, Recompute.FULL)


@dataclass(frozen=True, slots=True)
class TrainSpace:
    """Allowed values per layout dimension; ``None`` means every valid value."""

    tensor_parallel: tuple[int, ...] | None = None
    pipeline_parallel: tuple[int, ...] | None = None
    data_parallel: tuple[int, ...] | None = None
    context_parallel: tuple[int, ...] | None = None
    expert_parallel: tuple[int, ...] | None = None
    virtual_stages: tuple[int, ...] | None = None
    micro_batch_size: tuple[int, ...] | None = None
    zero_stage: tuple[int, ...] | None = None
    recompute: tuple[Recompute, ...] | None = None
    sequence_parallel: tuple[bool, ...] | None = None
    dtype: tuple[str, ...] | None = None
    expert_tensor_parallel: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class TrainProblem:
    """What is trained where: model dimensions, system, GPUs, batch (sequences) and sequence length (tokens)."""

    dims: ModelDims
    system: SystemSpec
    gpus: int
    global_batch: int
    seq_len: int
    accounted: int = 0  # embedding / loss counted as pipeline layers (pipeline-split accounting)
    layout_chunks: int = 0  # model chunks of an explicit pipeline layout (pp x vpp must equal them); 0: none

    @property
    def pipeline_units(self) -> int:
        """What pipeline chunks split: the layers, plus the accounted embedding / loss."""
        return self.dims.layers + self.accounted


@dataclass(frozen=True, slots=True)
class Group:
    """Layouts sharing the per-GPU shape except micro-batch, ZeRO stage and virtual stages."""

    tensor_parallel: int
    pipeline_parallel: int
    context_parallel: int
    data_parallel: int
    expert_parallel: int
    dtype: str
    sequence_parallel: bool
    recompute: Recompute
    expert_tensor_parallel: int | None = None

    def layout(self, micro_batch: int, zero: int, virtual_stages: int) -> ParallelLayout:
        return ParallelLayout(
            self.tensor_parallel,
            self.pipeline_parallel,
            self.data_parallel,
            self.context_parallel,
            self.expert_parallel,
            virtual_stages,
            micro_batch,
            zero,
            self.recompute,
            self.sequence_parallel,
            self.dtype,
            self.expert_tensor_parallel,
        )


def divisors(n: int) -> tuple[int, ...]:
    """Positive divisors of ``n`` in ascending order (trial division, O(sqrt n))."""
    small, large = [], []
    i = 1
    while i * i <= n:
        if n % i == 0:
            small.append(i)
            if i * i != n:
                large.append(n // i)
        i += 1
    return tuple(small + large[::-1])


def _allowed(values: tuple[int, ...], given: tuple | None) -> tuple:
    return values if given is None else tuple(v for v in values if v in set(given))


def default_dtypes(system: SystemSpec) -> tuple[str, ...]:
    """bf16, plus fp8 where the device has native FP8 tensor cores (else fp8 would run at bf16 speed)."""
    return ("bf16", "fp8") if Dtype.FP8 in system.device.peak_flops else ("bf16",)


def tensor_options(problem: TrainProblem, space: TrainSpace) -> tuple[int, ...]:
    dims = problem.dims
    valid = tuple(
        t
        for t in divisors(problem.gpus)
        if dims.heads % t == 0 and dims.hidden % t == 0 and (dims.kv_heads % t == 0 or t % dims.kv_heads == 0)
    )
    return _allowed(valid, space.tensor_parallel)


def _expert_options(problem: TrainProblem, space: TrainSpace, ranks: int, tp: int) -> Iterator[tuple[int, int | None]]:
    """(ep, etp) pairs for a stage of ``ranks`` = tp·cp·dp GPUs (etp None for dense models)."""
    dims = problem.dims
    if not dims.experts:
        for ep in _allowed((1,), space.expert_parallel):
            yield ep, None
        return
    etps = space.expert_tensor_parallel or tuple(sorted({1, tp}))
    for etp in etps:
        if ranks % etp or dims.expert_ffn % etp:
            continue
        for ep in _allowed(tuple(e for e in divisors(ranks // etp) if dims.experts % e == 0), space.expert_parallel):
            yield ep, etp


def _stages_fit(problem: TrainProblem, pp: int) -> bool:
    """``pp`` stages can hold the model: at most one per layer, or with pipeline-split accounting an
    equal share of the layers + accounted parts each (Megatron-Core's rule)."""
    if problem.layout_chunks:  # an explicit layout fixes pp x vpp (pp 1: a single chunk)
        return problem.layout_chunks % pp == 0 and (pp > 1 or problem.layout_chunks == 1)
    units = problem.pipeline_units
    return units % pp == 0 if problem.accounted else pp <= units


def _degrees(problem: TrainProblem, space: TrainSpace) -> Iterator[tuple[int, int, int, int, int, int | None]]:
    """(tp, pp, cp, dp, ep, etp) tuples that pass every divisibility rule."""
    for tp in tensor_options(problem, space):
        per_tp = problem.gpus // tp
        pps = _allowed(tuple(p for p in divisors(per_tp) if _stages_fit(problem, p)), space.pipeline_parallel)
        for pp in pps:
            per_pp = per_tp // pp
            cps = _allowed(tuple(c for c in divisors(per_pp) if problem.seq_len % c == 0), space.context_parallel)
            for cp in cps:
                dp = per_pp // cp
                if problem.global_batch % dp or (space.data_parallel is not None and dp not in space.data_parallel):
                    continue
                for ep, etp in _expert_options(problem, space, tp * cp * dp, tp):
                    yield tp, pp, cp, dp, ep, etp


def train_groups(problem: TrainProblem, space: TrainSpace) -> Iterator[Group]:
    """Every group of valid layouts, in canonical order."""
    dtypes = tuple(d for d in (space.dtype or default_dtypes(problem.system)) if d in DTYPES)
    recomputes = _allowed(RECOMPUTE_ORDER, space.recompute)
    for tp, pp, cp, dp, ep, etp in _degrees(problem, space):
        sps = _allowed((False, True) if tp > 1 else (False,), space.sequence_parallel)
        for dtype in dtypes:
            for sp in sps:
                for recompute in recomputes:
                    yield Group(tp, pp, cp, dp, ep, dtype, sp, recompute, etp)


def micro_batches(problem: TrainProblem, space: TrainSpace, group: Group) -> tuple[int, ...]:
    """Micro-batch sizes dividing global_batch/dp, ascending (activation memory grows along them)."""
    return _allowed(divisors(problem.global_batch // group.data_parallel), space.micro_batch_size)


def zero_options(space: TrainSpace, group: Group) -> tuple[int, ...]:
    """ZeRO stages, most sharded first (least memory first); with dp·cp = 1 (nothing to shard over)
    every stage is the same layout, so only the lowest allowed one."""
    stages = _allowed(ZERO_STAGES, space.zero_stage)
    if group.data_parallel * group.context_parallel == 1:
        return stages[:1]
    return tuple(sorted(stages, reverse=True))


def virtual_options(problem: TrainProblem, space: TrainSpace, group: Group, microbatches: int) -> tuple[int, ...]:
    """Virtual stages per GPU, ascending (stage-0 activation memory grows with them)."""
    pp, units = group.pipeline_parallel, problem.pipeline_units
    if problem.layout_chunks:
        vpp = problem.layout_chunks // pp
        return _allowed((vpp,) if vpp == 1 or microbatches % pp == 0 else (), space.virtual_stages)
    valid = [1]
    if pp > 1 and microbatches % pp == 0 and units % pp == 0:
        valid += [v for v in divisors(units // pp) if v > 1]
    return _allowed(tuple(valid), space.virtual_stages)


def check_space(problem: TrainProblem, space: TrainSpace) -> None:
    """Raise :class:`FabricsimError` naming the first dimension that leaves no valid layout."""
    if not tensor_options(problem, space):
        raise FabricsimError(
            "tp", f"no allowed tensor-parallel size divides {problem.gpus} GPUs and the model's heads/hidden size"
        )
    if not any(True for _ in _degrees(problem, space)):
        raise FabricsimError(
            "layout",
            f"no (tp, pp, cp, dp) with tp*pp*cp*dp = {problem.gpus} satisfies the constraints and divides "
            f"the global batch {problem.global_batch}",
            "relax --tp/--pp/--cp/--ep or change --gpus/--global-batch",
        )
    for name, given in (("dtype", space.dtype), ("zero", space.zero_stage), ("recompute", space.recompute)):
        if given is not None and not given:
            raise FabricsimError(name, "no allowed value")


def _as_tuple(value: object) -> tuple:
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(sorted(set(value), key=str))
    return (value,)


def train_space(constraints: dict[str, object]) -> TrainSpace:
    """A :class:`TrainSpace` from constraints keyed by the layout's short names (``tp``, ``pp``, ``dp``,
    ``cp``, ``ep``, ``vpp``, ``micro_batch``, ``zero``, ``recompute``, ``sequence_parallel``, ``dtype``);
    each value is one allowed value or a list of them, ``None`` for no constraint. The values were
    checked at the edge (:class:`fabricsim.specs.inputs.TrainConstraints`); the dtypes are checked here."""
    fields = {LONG_NAMES[key]: _as_tuple(value) for key, value in constraints.items() if value is not None}
    if "recompute" in fields:
        chosen = {Recompute(r) for r in fields["recompute"]}
        fields["recompute"] = tuple(r for r in RECOMPUTE_ORDER if r in chosen)
    if "dtype" in fields:
        for dtype in fields["dtype"]:
            check_dtype(str(dtype))
        fields["dtype"] = tuple(d for d in DTYPES if d in fields["dtype"])
    return TrainSpace(**fields)  # type: ignore[arg-type]
