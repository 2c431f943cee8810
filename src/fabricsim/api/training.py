"""Training steps: analytic and simulated (public API, layer L9)."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import fields
from typing import NamedTuple

from fabricsim import catalog
from fabricsim.api.cost import train_power
from fabricsim.cost.energy import TRAIN_ENERGY_KEYS, TrainPower, train_power_figures
from fabricsim.cost.power import PowerBreakdown
from fabricsim.engine.training import analytic
from fabricsim.engine.training.results import MemoryBreakdown, TimeBreakdown
from fabricsim.errors import FabricsimError, unknown_name
from fabricsim.limits import cap
from fabricsim.metrics import (
    TrainResult,
)
from fabricsim.specs import ModelSpec, ParallelLayout, Recompute, SystemSpec
from fabricsim.specs.inputs import (
    Batch,
    Degree,
    Depth,
    Fidelity,
    Gpus,
    PositiveFloat,
    RecomputeMode,
    Tokens,
    ZeroStage,
    edge,
)
from fabricsim.specs.layout import long_names
from fabricsim.specs.memory_tier import parse_offload
from fabricsim.transformer.compute import CROSS_ENTROPY_IMPLS
from fabricsim.transformer.flops import ModelDims, model_dims
from fabricsim.transformer.parameters import check_cluster_can_hold
from fabricsim.workload import training as work
from fabricsim.workload.training import FP8_RECIPES, MOE_DISPATCHERS, TrainingOptions

# The framework settings train / plan train / sweeps accept, with Megatron-Core's defaults
# (TrainingOptions documents each one).
OPTION_FLAGS = {
    "flash_attention": "flash-attention",
    "overlap_grad_reduce": "overlap-grad-reduce",
    "overlap_param_gather": "overlap-param-gather",
    "tp_comm_overlap": "tp-comm-overlap",
    "a2a_overlap": "a2a-overlap",
}


def training_options(
    *,
    flash_attention: bool | None = None,
    overlap_grad_reduce: bool | None = None,
    overlap_param_gather: bool | None = None,
    tp_comm_overlap: bool | None = None,
    a2a_overlap: bool | None = None,
    fp8_recipe: str | None = None,
    capacity_factor: float | None = None,
    moe_dispatcher: str | None = None,
    cross_entropy: str | None = None,
    mtp_layers: int | None = None,
    account_for_embedding_in_pipeline_split: bool | None = None,
    account_for_loss_in_pipeline_split: bool | None = None,
    grad_reduce_in_fp32: bool | None = None,
    pipeline_layout: str | None = None,
    recompute_modules: str | list[str] | None = None,
    lora_rank: int | None = None,
    free: bool | None = None,
) -> TrainingOptions:
    """Validated :class:`TrainingOptions`: each None switch takes Megatron-Core's default (off, flash
    attention on), or ``free`` when given (the planner passes True: in this model an overlap never
    makes a step slower or bigger, so it is the best free choice). Raises ``FabricsimError``."""
    given = {
        "flash_attention": flash_attention,
        "overlap_grad_reduce": overlap_grad_reduce,
        "overlap_param_gather": overlap_param_gather,
        "tp_comm_overlap": tp_comm_overlap,
        "a2a_overlap": a2a_overlap,
    }
    switches: dict[str, bool] = {}
    for name, value in given.items():
        if value is not None and not isinstance(value, bool):
            raise FabricsimError(OPTION_FLAGS[name], f"must be true or false, got {value!r}")
        if value is None and free is not None and name != "flash_attention":
            value = free
        switches[name] = value if value is not None else name == "flash_attention"
    if fp8_recipe is not None and fp8_recipe not in FP8_RECIPES:
        raise unknown_name("fp8-recipe", str(fp8_recipe), FP8_RECIPES)
    if moe_dispatcher is not None and moe_dispatcher not in MOE_DISPATCHERS:
        raise unknown_name("moe-dispatcher", str(moe_dispatcher), MOE_DISPATCHERS)
    accounting = {"embedding": account_for_embedding_in_pipeline_split, "loss": account_for_loss_in_pipeline_split}
    for part, value in accounting.items():
        if value is not None and not isinstance(value, bool):
            raise FabricsimError(f"account-for-{part}-in-pipeline-split", f"must be true or false, got {value!r}")
    if grad_reduce_in_fp32 is not None and not isinstance(grad_reduce_in_fp32, bool):
        raise FabricsimError("grad-reduce-in-fp32", f"must be true or false, got {grad_reduce_in_fp32!r}")
    if cross_entropy is not None and cross_entropy not in CROSS_ENTROPY_IMPLS:
        raise unknown_name("cross-entropy", str(cross_entropy), CROSS_ENTROPY_IMPLS)
    if capacity_factor is not None:
        if isinstance(capacity_factor, bool) or not isinstance(capacity_factor, (int, float)):
            raise FabricsimError("capacity-factor", f"must be a number, got {capacity_factor!r}")
        capacity_factor = float(capacity_factor)
    options = TrainingOptions(
        flash_attention=switches["flash_attention"],
        overlap_grad_reduce=switches["overlap_grad_reduce"],
        overlap_tp_comm=switches["tp_comm_overlap"],
        overlap_param_gather=switches["overlap_param_gather"],
        a2a_overlap=switches["a2a_overlap"],
        fp8_recipe=fp8_recipe,
        capacity_factor=capacity_factor,
        moe_dispatcher=moe_dispatcher or "alltoall",
        cross_entropy=cross_entropy or "unfused",
        mtp_layers=0 if mtp_layers is None else mtp_layers,
        account_for_embedding=bool(account_for_embedding_in_pipeline_split),
        account_for_loss=bool(account_for_loss_in_pipeline_split),
        grad_reduce_in_fp32=grad_reduce_in_fp32,
        pipeline_layout=pipeline_layout,
        recompute_modules=_module_list(recompute_modules),
        lora_rank=0 if lora_rank is None else lora_rank,
    )
    options.validate()
    return options


def _module_list(modules: str | list[str] | None) -> tuple[str, ...] | None:
    """``--recompute-modules`` as given (a comma-separated string or a list) -> a tuple of names."""
    if modules is None:
        return None
    if isinstance(modules, str):
        modules = modules.split(",")
    if not isinstance(modules, (list, tuple)) or not all(isinstance(m, str) for m in modules):
        raise FabricsimError("recompute-modules", f"must be module names, got {modules!r}")
    return tuple(m.strip() for m in modules if m.strip())


SETTINGS = tuple(name for name in inspect.signature(training_options).parameters if name != "free")
"""The keywords of :func:`training_options` (the framework settings), apart from the layout's."""


@edge
def train(
    model: str,
    system: str,
    gpus: Gpus,
    global_batch: Batch,
    seq_len: Tokens,
    *,
    tp: Degree | None = None,
    pp: Degree | None = None,
    dp: Degree | None = None,
    cp: Degree | None = None,
    ep: Degree | None = None,
    vpp: Degree | None = None,
    micro_batch: Batch | None = None,
    zero: ZeroStage | None = None,
    recompute: RecomputeMode | None = None,
    sequence_parallel: bool | None = None,
    dtype: str | None = None,
    expert_tp: Degree | None = None,
    flash_attention: bool | None = None,
    overlap_grad_reduce: bool | None = None,
    overlap_param_gather: bool | None = None,
    tp_comm_overlap: bool | None = None,
    a2a_overlap: bool | None = None,
    fp8_recipe: str | None = None,
    capacity_factor: PositiveFloat | None = None,
    moe_dispatcher: str | None = None,
    cross_entropy: str | None = None,
    mtp_layers: Depth | None = None,
    account_for_embedding_in_pipeline_split: bool | None = None,
    account_for_loss_in_pipeline_split: bool | None = None,
    grad_reduce_in_fp32: bool | None = None,
    pipeline_layout: str | None = None,
    recompute_modules: str | list[str] | None = None,
    lora_rank: Depth | None = None,
    offload: str | list[str] | None = None,
    offload_tier: str | None = None,
) -> TrainResult:
    """Estimate one training step of ``model`` on ``gpus`` GPUs of ``system`` (analytic fidelity).

    ``offload`` (``"optimizer,weights,activations"`` or a list) keeps those tensor classes on the
    memory tier ``offload_tier`` (``host`` default, ``grace``, ``cxl``: one the system YAML lists
    under ``memory_tiers``); the exposed transfers are ``time_breakdown_s.offload_s``.

    Unset layout fields get defaults (see ``fabricsim.workload.training.resolve_layout``: dp =
    gpus/(tp·pp·cp), micro-batch 1, no interleaving, ZeRO 1 for MoE else 0, no recomputation,
    sequence parallelism when tp > 1, bf16, expert TP = tp where it fits else 1). Framework
    settings (``flash_attention`` ... ``recompute_modules``) default as Megatron-Core does (see
    :func:`training_options`). Every argument is checked at this edge
    (:mod:`fabricsim.specs.inputs`); invalid layouts raise FabricsimError naming the field;
    a layout that does not fit is a result with ``fits`` False.
    """
    # the settings in SETTINGS order, spelled out (locals() and a dict of them cost more than the estimate's arithmetic)
    settings = (
        flash_attention, overlap_grad_reduce, overlap_param_gather, tp_comm_overlap, a2a_overlap, fp8_recipe,
        capacity_factor, moe_dispatcher, cross_entropy, mtp_layers, account_for_embedding_in_pipeline_split,
        account_for_loss_in_pipeline_split, grad_reduce_in_fp32, pipeline_layout, recompute_modules, lora_rank,
    )
    held = _checked_specs(model, system, gpus)
    layout = work.resolve_checked_layout(
        gpus, held.dims, (tp, pp, dp, cp, ep, vpp, micro_batch, zero, recompute, sequence_parallel, dtype, expert_tp)
    )
    if settings == _UNSET:  # the common call: every setting at its default (no A2A overlap, no modules: they
        options = _DEFAULT_SETTINGS  # run with every layout)
    else:
        options = _options_of(settings)
        check_settings_for_layout(options, layout)
    placement = None if offload is None and offload_tier is None else parse_offload(offload, offload_tier)
    if placement is not None:
        held.system.memory_tier(placement.tier)
    estimate = _context(held, options).estimate(layout, global_batch, seq_len, placement)
    power = held.powers.get(gpus, False)
    if power is False:
        power = _power(held, gpus)
    source = (held.model_name, held.system_name, estimate, options, power)
    return _DEFERRED(_TUPLE(_EstimateSource, source))  # as train_result builds it


_OPTIONS: dict[tuple, TrainingOptions] = {}  # training_options per distinct settings (immutable, pure)
OPTIONS_KEPT = 64


def _options(settings: dict[str, object]) -> TrainingOptions:
    """:func:`training_options` of ``settings`` (every name of :data:`SETTINGS`), built and checked
    once per distinct value (see :func:`_options_of`)."""
    return _options_of(tuple(settings[name] for name in SETTINGS))


def _options_of(values: tuple) -> TrainingOptions:
    """:func:`training_options` of the settings ``values`` (in :data:`SETTINGS` order), built and
    checked once per distinct value (a refusal is not kept: it raises each time; unhashable
    settings, e.g. a list, are not kept)."""
    if values == _UNSET:  # the common call: every setting at its default
        return _DEFAULT_SETTINGS
    key = (values, tuple(map(type, values)))  # True and 1 are equal keys, not the same setting
    try:
        return _OPTIONS[key]
    except KeyError:
        pass
    except TypeError:
        return training_options(**dict(zip(SETTINGS, values, strict=True)))
    options = training_options(**dict(zip(SETTINGS, values, strict=True)))
    if len(_OPTIONS) >= OPTIONS_KEPT:
        _OPTIONS.clear()
    _OPTIONS[key] = options
    return options


_UNSET = (None,) * len(SETTINGS)
_DEFAULT_SETTINGS = training_options()  # every setting unset (what _options_of would build for _UNSET)


class _Held(NamedTuple):
    """A (model, system) spec pair whose cluster-size check passed at one GPU cap, with what
    ``train`` reads of it per call, in one thread."""

    model: ModelSpec
    system: SystemSpec
    gpu_cap: int  # the cap the check passed at (limits.cap("GPUS"))
    dims: ModelDims
    powers: dict[int, TrainPower | None]  # the cluster's power per GPU count (filled by train)
    model_name: str  # the specs' names (reading a pydantic field costs ~50 ns each)
    system_name: str
    contexts: dict[int, tuple[TrainingOptions, analytic.TrainingContext]]  # by id of the options (see _context)


# Each thread's _Held per (model, system) as given (_CONTEXTS.held): the check sums the model's
# parameters and model_dims counts them again (together a third of an estimate); the power is
# cached by api.cost, but finding it there took as long as the engine's step time. All are pure
# functions of the frozen specs, the cap and the GPU count. An entry holds while the catalog gives
# the same spec objects for the names (it returns one object per catalog name, and a new one for
# an edited user file) and the cap is unchanged. Per thread because it holds the engine's contexts,
# which are not shared between threads (benchmarks/bench_vs_calculon.py clears it for a cold context).
_CONTEXTS = threading.local()
HELD_KEPT = 64


def _held() -> dict[tuple[str, str], _Held]:
    try:
        return _CONTEXTS.held
    except AttributeError:  # this thread's first call
        held = _CONTEXTS.held = {}
        return held


_LOADED_MODEL = catalog.load_model.loaded  # type: ignore[attr-defined]
_LOADED_SYSTEM = catalog.load_system.loaded  # type: ignore[attr-defined]


def _checked_specs(model: str, system: str, gpus: int) -> _Held:
    """The catalog specs of ``model`` and ``system``, the model's dimensions and the pair's power
    figures by GPU count (filled by ``train``), checked for ``gpus`` GPUs and for a cluster that can
    hold the model (:func:`check_cluster_can_hold`, once per spec pair and GPU cap). A GPU count
    with a power figure passed the system's check already (the system is the same object)."""
    model_spec = _LOADED_MODEL(model) or catalog.load_model(model)
    system_spec = _LOADED_SYSTEM(system) or catalog.load_system(system)
    gpu_cap = cap("GPUS")
    held = _held()
    hit = held.get((model, system))
    if hit is not None and hit.model is model_spec and hit.system is system_spec and hit.gpu_cap == gpu_cap:
        if gpus not in hit.powers:
            system_spec.check_gpu_count(gpus)
        return hit
    system_spec.check_gpu_count(gpus)
    check_cluster_can_hold(model_spec, system_spec)
    if len(held) >= HELD_KEPT:
        held.clear()
    dims = model_dims(model_spec)
    hit = _Held(model_spec, system_spec, gpu_cap, dims, {}, model_spec.name, system_spec.name, {})
    held[(model, system)] = hit
    return hit


def _power(held: _Held, gpus: int) -> TrainPower | None:
    """The power figures of ``gpus`` GPUs of the held system, kept with it (None without power data)."""
    if len(held.powers) >= HELD_KEPT:
        held.powers.clear()
    drawn = train_power(held.system, gpus)
    power = held.powers[gpus] = None if drawn is None else train_power_figures(drawn)
    return power


# The engine's context per (model, system, options), reused by later train calls of this thread (a
# context is not shared between threads): its caches hold pure per-shape work (stage costs, layer
# times, collective times), so a loop of train calls over layouts, batches or sequence lengths
# pays for each shape once, as a sweep holding one context does. Bounded: a few contexts per
# thread, each rebuilt once it holds many shapes. Kept with the spec pair's _Held, by the options'
# identity (train uses one options object per distinct settings, _options_of; hashing their 16
# fields cost more than the look-up); the entry keeps the options alive.
CONTEXTS_KEPT = 8
SHAPES_KEPT = 4096


def _context(held: _Held, options: TrainingOptions) -> analytic.TrainingContext:
    hit = held.contexts.get(id(options))
    if hit is None or hit[1].shapes_cached > SHAPES_KEPT:
        every = _held().values()
        if sum(len(entry.contexts) for entry in every) >= CONTEXTS_KEPT:  # this thread's, over all spec pairs
            for entry in every:
                entry.contexts.clear()
        hit = held.contexts[id(options)] = (options, analytic.training_context(held.model, held.system, options))
    return hit[1]


def a2a_overlap_unavailable(options: TrainingOptions, layout: ParallelLayout) -> bool:
    """True where the A2A overlap is asked of an expert-parallel layout that Megatron-Core has no
    combined schedule for: pipelining without interleaving (its config asserts virtual stages when
    pp > 1). ``train`` refuses it; the planner, which picks the overlap freely, times and reports
    such layouts without it (``workload.pipeline.a2a_paired_share`` is 0 there)."""
    pipelined = layout.pipeline_parallel > 1 and layout.virtual_stages == 1
    return options.a2a_overlap and layout.expert_parallel > 1 and pipelined


def check_settings_for_layout(options: TrainingOptions, layout: ParallelLayout) -> None:
    """Raise FabricsimError for a setting the layout cannot run with: the A2A overlap where
    :func:`a2a_overlap_unavailable`, recompute modules without selective recomputation."""
    if a2a_overlap_unavailable(options, layout):
        raise FabricsimError(
            "a2a-overlap", "needs the interleaved schedule when pp > 1 (Megatron-Core)", "add --vpp 2 or more"
        )
    if options.recompute_modules and layout.recompute is not Recompute.SELECTIVE:
        problem = "modules apply to selective recomputation"
        raise FabricsimError("recompute-modules", problem, "add --recompute selective")


def training_specs(
    model: str, system: str, gpus: int, given: dict[str, object]
) -> tuple[ModelSpec, SystemSpec, ParallelLayout]:
    """Catalog names and validated layout keywords (short names, None = default) -> specs."""
    held = _checked_specs(model, system, gpus)
    model_spec, system_spec, dims = held.model, held.system, held.dims
    layout = work.resolve_layout(gpus, dims, **long_names(given))
    return model_spec, system_spec, layout


def train_result(
    model: str,
    system: str,
    estimate: analytic.TrainingEstimate,
    options: TrainingOptions | None = None,
    power: PowerBreakdown | None = None,
) -> TrainResult:
    """The ``train`` JSON contract of one analytic estimate, with its energy figures at ``power``
    (the cluster's power under training load; none without). Deferred
    (:meth:`TrainResult.deferred`): its fields are built on first read, and ``to_json`` builds the
    JSON object from the estimate without them (issue 27)."""
    figures = None if power is None else train_power_figures(power)
    return _DEFERRED(_TUPLE(_EstimateSource, (model, system, estimate, options or _DEFAULT_OPTIONS, figures)))


class _EstimateSource(NamedTuple):
    """A :class:`~fabricsim.metrics.TrainSource`: one analytic estimate and what its result adds.
    :meth:`to_json` is the one place the result's figures are derived; :meth:`values` reads them
    back as the fields (so the two cannot differ)."""

    model: str
    system: str
    estimate: analytic.TrainingEstimate
    options: TrainingOptions
    power: TrainPower | None  # the cluster's power figures (energy.train_power_figures)

    def to_json(self) -> dict[str, object]:
        """The ``train`` JSON contract, keys in :class:`TrainResult`'s field order (dict displays:
        the fastest build in CPython). The derived rates are the estimate's properties spelled out
        once (each property recomputed its inputs)."""
        model, system, estimate, options, power = self
        # the estimate's fields in one unpacking (a TrainingEstimate is a named tuple)
        (layout, global_batch, seq_len, microbatches, step_s, model_flops, hardware_flops, peak, time, memory,
         capacity, tier) = estimate
        gpus, tokens, memory_bytes = layout.gpus, global_batch * seq_len, memory.total
        model_flops_per_gpu_s = model_flops / (gpus * step_s)
        hardware_flops_per_gpu_s = hardware_flops / (gpus * step_s)
        out = {
            "model": model,
            "system": system,
            "gpus": gpus,
            "global_batch": global_batch,
            "seq_len": seq_len,
            "microbatches": microbatches,
            "step_time_s": step_s,
            "tokens_per_s": tokens / step_s,
            "model_tflops_per_gpu": model_flops_per_gpu_s / 1e12,
            "hardware_tflops_per_gpu": hardware_flops_per_gpu_s / 1e12,
            "mfu": model_flops_per_gpu_s / peak,
            "hfu": hardware_flops_per_gpu_s / peak,
            # TrainingEstimate.fits without its tuple of overflowing tiers where nothing is offloaded
            "fits": not memory_bytes > capacity if tier is None else estimate.fits,
            "memory_per_gpu_bytes": memory_bytes,
            "memory_capacity_bytes": capacity,
            "memory_breakdown_bytes": _memory_json(memory),
            "time_breakdown_s": _time_json(time),
            "layout": layout.as_dict(),
            "fidelity": "analytic",
            "options": _options_view(options, layout.dtype),
        }
        if power is not None:
            step_J, power_W, per_token, per_kWh = power.energy(step_s, tokens)
            out["energy_J_per_step"] = step_J  # TRAIN_ENERGY_KEYS, in order
            out["power_W"] = power_W
            out["energy_J_per_token"] = per_token
            out["tokens_per_kWh"] = per_kWh
        if tier is not None:
            out["layout"].update(tier.offload.as_dict())  # type: ignore[attr-defined]
            out.update(_tiers_json(estimate))
        return out

    def values(self) -> tuple:
        """The :class:`TrainResult` field values, in field order: :meth:`to_json` read back (its
        tables as name/value pairs, the energy and tier keys as the flattened fields' pairs)."""
        out = self.to_json()
        tables = tuple(tuple(out.pop(name).items()) for name in _TABLES)  # type: ignore[attr-defined]
        energy = () if self.power is None else tuple((key, out.pop(key)) for key in TRAIN_ENERGY_KEYS)
        scalars = tuple(out.pop(name) for name in _SCALAR_KEYS)
        fidelity = out.pop("fidelity")
        tiers = tuple(out.items())  # what is left: the offload tiers' keys
        return (*scalars, *tables[:3], fidelity, _options_json(self.options, self.estimate.layout.dtype), energy, tiers)


def _dict_display(row: type[tuple]) -> Callable[[tuple], dict[str, object]]:
    """A function building ``row._asdict()`` of a named tuple type as one dict display (half the
    time of ``_asdict``'s ``dict(zip(...))``, on every estimate's JSON). Generated from the type's
    fields, as dataclasses generate their methods, so that it cannot fall out of step with them."""
    names = row._fields  # type: ignore[attr-defined]
    slots = [f"_{index}" for index in range(len(names))]
    entries = ", ".join(f"{name!r}: {slot}" for name, slot in zip(names, slots, strict=True))
    source = f"def as_dict(row):\n    {', '.join(slots)}, = row\n    return {{{entries}}}\n"
    namespace: dict[str, object] = {}
    exec(source, namespace)  # the source is built from the type's field names only
    function = namespace["as_dict"]
    function.__qualname__ = f"{row.__name__}_as_dict"  # type: ignore[attr-defined]
    return function  # type: ignore[return-value]


_memory_json = _dict_display(MemoryBreakdown)
_time_json = _dict_display(TimeBreakdown)


_DEFERRED = TrainResult.deferred
_TUPLE = tuple.__new__
_FIELDS = tuple(item.name for item in fields(TrainResult))
_SCALAR_KEYS = _FIELDS[:15]  # model ... memory_capacity_bytes
_TABLES = ("memory_breakdown_bytes", "time_breakdown_s", "layout", "options")
assert _FIELDS[15:] == (*_TABLES[:3], "fidelity", "options", "energy", "tiers")


_DEFAULT_OPTIONS = TrainingOptions()
# (id of the options, dtype) -> (the options, kept alive; their JSON pairs; the same as a dict, which a
# caller gets a copy of). By identity: train's options are one object per distinct settings
# (_options_of), and hashing 16 fields costs more.
_OPTIONS_JSON: dict[tuple[int, str], tuple[TrainingOptions, tuple[tuple[str, object], ...], dict[str, object]]] = {}


def _options_json(options: TrainingOptions, dtype: str) -> tuple[tuple[str, object], ...]:
    """``options.as_dict(dtype)`` as pairs, built once per (options object, dtype) where every value
    is immutable (a list of recompute modules is built per result: a caller may change its copy)."""
    return _options_entry(options, dtype)[1]


def _options_view(options: TrainingOptions, dtype: str) -> dict[str, object]:
    """A new dict of :func:`_options_json` (a copy of the kept one: a dict copies faster than pairs)."""
    hit = _OPTIONS_JSON.get((id(options), dtype))  # _options_entry's look-up, inline: on every estimate's JSON
    if hit is None:
        hit = _options_entry(options, dtype)
    return hit[2].copy()


def _options_entry(
    options: TrainingOptions, dtype: str
) -> tuple[TrainingOptions, tuple[tuple[str, object], ...], dict[str, object]]:
    key = (id(options), dtype)
    hit = _OPTIONS_JSON.get(key)
    if hit is not None:  # the options are the kept ones (an entry keeps them alive; two live objects never share an id)
        return hit
    view = options.as_dict(dtype)
    hit = (options, tuple(view.items()), view)
    if not options.recompute_modules:
        if len(_OPTIONS_JSON) >= OPTIONS_KEPT:
            _OPTIONS_JSON.clear()
        _OPTIONS_JSON[key] = hit
    return hit


def _tiers_json(estimate: analytic.TrainingEstimate) -> tuple[tuple[str, object], ...]:
    """Per-tier memory keys of an offloaded estimate (none without offload)."""
    tier = estimate.tier
    if tier is None:
        return ()
    name = tier.offload.tier.value
    return (
        ("memory_breakdown_bytes_by_tier", {"hbm": estimate.memory.as_dict(), name: tier.bytes.as_dict()}),
        ("memory_capacity_bytes_by_tier", {"hbm": estimate.memory_capacity_bytes, name: tier.capacity_bytes}),
        ("memory_overflow_tiers", list(estimate.overflow_tiers)),
    )


FIDELITIES = tuple(f.value for f in Fidelity)
