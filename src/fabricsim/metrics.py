"""Immutable results and the JSON contract of DESIGN.md (layer L7).

Each result is a frozen dataclass whose ``to_json()`` gives exactly the keys the contract names,
with units in the key names. Rendering (tables) lives in ``report``; files in ``io``.

The contract is declared once, by the fields: :func:`contract_json` turns each field into the key
of its name (name/value pairs become objects, tuples of results lists of their JSON); a field's
``metadata`` says where it differs (``FLATTEN``: its pairs are keys of the result itself, e.g.
the energy figures; ``SKIP``: not serialised; ``EMPTY_AS_NULL``: an empty value is ``null``).
Adding a field adds its key; no ``to_json`` repeats the field list (those whose JSON is shaped
unlike their fields, such as ``TrafficResult``, still spell it out).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import lru_cache
from operator import attrgetter
from typing import Any, Protocol

FLATTEN = {"json": "flatten"}
SKIP = {"json": "skip"}
EMPTY_AS_NULL = {"json": "empty-as-null"}


def _pairs(annotation: object) -> bool:
    return str(annotation).replace(" ", "").startswith("tuple[tuple[str,")


@lru_cache(maxsize=256)
def _plan(kind: type) -> tuple[tuple[str, object, bool], ...]:
    """(name, JSON role, holds name/value pairs) per field of the result class ``kind``, in order:
    read once per class (per call it was most of an estimate's ``to_json``, issue 27)."""
    return tuple((item.name, item.metadata.get("json"), _pairs(item.type)) for item in fields(kind))


def contract_json(result: Any) -> dict[str, object]:
    """The JSON object of a result dataclass, from its fields (see the module docstring)."""
    fast = _fast_plan(type(result))
    return _field_json(result) if fast is None else _fast_json(result, fast)


def _field_json(result: Any) -> dict[str, object]:
    """:func:`contract_json` field by field (the reference the one-step build must equal)."""
    out: dict[str, object] = {}
    for name, role, pairs in _plan(type(result)):
        if role == "skip":
            continue
        value = getattr(result, name)
        if role == "empty-as-null" and not value:
            value = None
        elif value is not None and pairs:
            value = dict(value)
        elif isinstance(value, tuple) and value and hasattr(value[0], "to_json"):
            value = [entry.to_json() for entry in value]
        if role == "flatten":
            out.update(value or {})  # type: ignore[call-overload]
        else:
            out[name] = value
    return out


_SCALARS = frozenset(f"{kind}{none}" for kind in ("str", "int", "float", "bool") for none in ("", " | None"))


@lru_cache(maxsize=256)
def _fast_plan(kind: type) -> tuple[Any, tuple[str, ...], tuple[tuple[str, object, bool], ...], Any] | None:
    """:func:`contract_json`'s plan of ``kind`` as (a getter of its keyed fields' values, their
    names, the fields whose value needs converting, a getter of the fields to flatten), where the
    JSON object can be built in one step: at least two keyed fields and every flattened field after
    them (so the keys keep the fields' order). None otherwise (the field-by-field loop builds it).
    A field annotated as a plain scalar (``str``, ``int``, ``float``, ``bool``, or None) is taken as
    it is; every other one is converted as the loop converts it. (Issue 27: ``to_json`` was a
    tenth of an in-process ``train``.)"""
    plan = [(item, item.metadata.get("json")) for item in fields(kind) if item.metadata.get("json") != "skip"]
    flattened = [item.name for item, role in plan if role == "flatten"]
    keyed = [item for item, role in plan if role != "flatten"]
    if len(keyed) < 2 or any(role != "flatten" for _, role in plan[len(keyed):]):
        return None
    convert = tuple(
        (item.name, role, _pairs(item.type))
        for item, role in plan
        if role != "flatten" and (role is not None or str(item.type) not in _SCALARS)
    )
    names = tuple(item.name for item in keyed)
    flatten = attrgetter(*flattened) if len(flattened) > 1 else None
    if len(flattened) == 1:
        one = attrgetter(flattened[0])
        flatten = lambda result: (one(result),)  # noqa: E731
    return attrgetter(*names), names, convert, flatten


def _fast_json(result: Any, plan: tuple[Any, tuple[str, ...], tuple[tuple[str, object, bool], ...], Any]) -> dict:
    getter, names, convert, flatten = plan
    out = dict(zip(names, getter(result), strict=True))
    for name, role, pairs in convert:
        value = out[name]
        if role == "empty-as-null" and not value:
            out[name] = None
        elif value is not None and pairs:
            out[name] = dict(value)
        elif isinstance(value, tuple) and value and hasattr(value[0], "to_json"):
            out[name] = [entry.to_json() for entry in value]
    if flatten is not None:
        for value in flatten(result):
            if value:
                out.update(value)
    return out


@dataclass(frozen=True, slots=True)
class CollectiveResult:
    """One collective's estimate. ``size_bytes`` follows nccl-tests' definition of S per op."""

    op: str
    gpus: int
    size_bytes: int
    algorithm: str
    protocol: str
    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    fidelity: str = "analytic"

    def to_json(self) -> dict[str, object]:
        return contract_json(self)


@dataclass(frozen=True, slots=True)
class SweepSummary:
    """One ``fabricsim sweep`` run: tasks in the spec, computed now (ok / failed), already stored."""

    tasks_total: int
    tasks_done: int
    tasks_skipped: int
    tasks_failed: int
    elapsed_s: float
    db: str
    executor: str
    workers: int
    export: str | None = None

    def to_json(self) -> dict[str, object]:
        return contract_json(self)


class TrainSource(Protocol):
    """What a deferred :class:`TrainResult` is built from (:meth:`TrainResult.deferred`): a
    producer's own record of one estimate, able to give the result's field values (in field order)
    and its JSON object (equal, key order included, to :func:`contract_json` of those values)."""

    def values(self) -> tuple: ...

    def to_json(self) -> dict[str, object]: ...


class _Deferred:
    """The one slot a deferred result keeps besides its fields: its :class:`TrainSource` until the
    fields are filled (then None; unset on a result built from its fields)."""

    __slots__ = ("_source",)


@dataclass(frozen=True, slots=True)
class TrainResult(_Deferred):
    """One training-step estimate (``fabricsim train``). ``time_breakdown_s`` adds up to
    ``step_time_s``; ``memory_breakdown_bytes`` adds up to ``memory_per_gpu_bytes`` (most loaded GPU).
    Model FLOPs exclude recomputation (MFU); hardware FLOPs include it (HFU).

    Built from its fields as any dataclass, or deferred (:meth:`deferred`, what ``api.train`` does):
    then no field is stored until one is read, and ``to_json`` builds the JSON object straight from
    the source. Issue 27: the ~40 objects of a result's tables (its name/value pairs) cost half of
    an in-process ``api.train`` + ``to_json``, building them and freeing them, while most callers
    only want the JSON. The first read of any field fills them all, once; equality, hashing,
    ``repr``, ``dataclasses.replace``/``fields``/``asdict``, copies and pickles read the fields and
    so see a plain result."""

    model: str
    system: str
    gpus: int
    global_batch: int
    seq_len: int
    microbatches: int
    step_time_s: float
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    fits: bool
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    memory_breakdown_bytes: tuple[tuple[str, float], ...]
    time_breakdown_s: tuple[tuple[str, float], ...]
    layout: tuple[tuple[str, object], ...]
    fidelity: str = "analytic"
    options: tuple[tuple[str, object], ...] = ()  # framework settings (TrainingOptions.as_dict)
    energy: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)  # power_W, ... (cost.energy)
    # offload only: memory_breakdown_bytes_by_tier ({tier: {kind: bytes}}), memory_capacity_bytes_by_tier
    # ({tier: bytes}) and memory_overflow_tiers
    tiers: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)

    @classmethod
    def deferred(cls, source: TrainSource) -> TrainResult:
        """A result whose fields are ``source.values()``, read on first use (class docstring)."""
        result = _NEW(cls)
        _SET_SOURCE(result, source)
        return result

    def __getattr__(self, name: str) -> object:
        # only reached for an attribute not stored: a deferred result's field, or a missing name
        if name == "_source":
            return None  # a result built from its fields
        if name not in _TRAIN_FIELDS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        source = self._source
        if source is not None:  # None: another thread filled the fields meanwhile
            for field_name, value in zip(_TRAIN_FIELDS, source.values(), strict=True):
                _SET(self, field_name, value)
            _SET_SOURCE(self, None)
        return _GET(self, name)

    def to_json(self) -> dict[str, object]:
        source = self._source
        return contract_json(self) if source is None else source.to_json()


_TRAIN_FIELDS = tuple(item.name for item in fields(TrainResult))
_NEW = object.__new__
_SET = object.__setattr__
_GET = object.__getattribute__
_SET_SOURCE = _Deferred._source.__set__  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class SimulatedTrainResult:
    """A training step from the event-driven engine (``fabricsim train --fidelity simulate|flow``).

    ``train`` is the ``fabricsim train`` contract with the simulated step time (and the rates that
    follow from it) and a breakdown of the critical rank that adds up to it. With variability on,
    ``step_time_s_p50``/``step_time_s_p99`` are Monte-Carlo percentiles over ``seeds`` runs
    (``step_time_s`` stays the no-variability time). ``exposed_comm_s`` is communication not
    hidden behind compute, per collective category, per GPU; ``folded`` says what symmetry the
    engine used. ``simulation`` (not serialised) holds the op graph and timeline for traces.
    """

    train: TrainResult
    analytic_step_time_s: float
    step_time_s_p50: float | None
    step_time_s_p99: float | None
    seeds: int
    exposed_comm_s: tuple[tuple[str, float], ...]
    comm_busy_s: tuple[tuple[str, float], ...]
    folded: tuple[tuple[str, int], ...]
    simulated_ops: int
    simulation: object = field(default=None, compare=False, repr=False)
    network: dict[str, Any] | None = field(default=None, compare=False)  # flow/packet: the fabric's report

    def to_json(self) -> dict[str, object]:
        out = self.train.to_json()
        out.update(
            {
                "analytic_step_time_s": self.analytic_step_time_s,
                "exposed_comm_s": dict(self.exposed_comm_s),
                "comm_busy_s": dict(self.comm_busy_s),
                "folded": dict(self.folded),
                "simulated_ops": self.simulated_ops,
            }
        )
        if self.network is not None:
            out["network"] = self.network
        if self.step_time_s_p50 is not None:
            out.update(
                {"step_time_s_p50": self.step_time_s_p50, "step_time_s_p99": self.step_time_s_p99, "seeds": self.seeds}
            )
        return out


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """One ranked plan: its result (``train`` or ``infer`` contract) and why it loses to rank 1."""

    rank: int
    result: Any  # TrainResult | SimulatedTrainResult | InferResult: anything with to_json()
    reasons: tuple[str, ...] = ()
    extra: tuple[tuple[str, object], ...] = ()  # planner facts, e.g. what limited an inference batch

    def to_json(self) -> dict[str, object]:
        return {"rank": self.rank, **self.result.to_json(), **dict(self.extra), "why": list(self.reasons)}


@dataclass(frozen=True, slots=True)
class PlanResult:
    """A layout search (``fabricsim plan train|infer``).

    ``evaluated``: valid layouts assessed (each timed, or rejected by a bound); ``feasible``: those
    that fit in memory (and meet the SLO for ``infer``); ``costed``: those the engine priced;
    ``pruned``: rejected per reason before costing. ``elapsed_s`` is wall time -- the only field
    that differs between identical runs. With nothing feasible, ``plans`` is empty and
    ``smallest_memory_per_gpu_bytes`` says how much the least hungry layout needs.
    """

    kind: str
    model: str
    system: str
    gpus: int
    objective: str
    evaluated: int
    feasible: int
    costed: int
    pruned: tuple[tuple[str, int], ...]
    elapsed_s: float
    plans: tuple[PlanEntry, ...]
    smallest_memory_per_gpu_bytes: float | None = None
    smallest_memory_layout: tuple[tuple[str, object], ...] | None = field(default=None, metadata=EMPTY_AS_NULL)
    refined: int = 0
    extra: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)  # e.g. the serving split search

    def to_json(self) -> dict[str, object]:
        return contract_json(self)


@dataclass(frozen=True, slots=True)
class InferResult:
    """One static batch of inference (``fabricsim infer``). ``batch`` is sequences per model replica;
    ``output_tokens_per_s`` counts all replicas; ``kv_cache_bytes`` and ``memory_per_gpu_bytes`` are
    per GPU (the batch's KV at its final length; weights + KV + activations + framework)."""

    model: str
    system: str
    gpus: int
    ttft_s: float
    tpot_s: float
    e2e_latency_s: float
    batch: int
    output_tokens_per_s: float
    kv_cache_bytes: float
    memory_per_gpu_bytes: float
    memory_capacity_bytes: float
    fits: bool
    layout: tuple[tuple[str, object], ...]
    time_breakdown_s: tuple[tuple[str, float], ...] = ()
    fidelity: str = "analytic"
    kv_spilled_bytes: float = 0.0
    energy: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)  # power_W, ... (cost.energy)

    def to_json(self) -> dict[str, object]:
        return contract_json(self)


@dataclass(frozen=True, slots=True)
class ServeResult:
    """A simulated serving run (``fabricsim serve``): latency percentiles in seconds (``{p50, p90,
    p99}``), output tokens/s over the run (first arrival to last finish), SLO attainment (fraction of
    requests with TTFT and TPOT within the SLOs). ``fits``: every pool's replica KV cache holds its
    longest request (``kv_capacity_tokens`` per replica vs ``longest_request_tokens``);
    ``memory_per_gpu_bytes`` is what one such request per replica needs (most loaded pool; per pool
    in ``pools`` when disaggregated). A deployment that does not fit serves nothing: 0 completed,
    null percentiles. ``kv_transfer_s``: the prefill -> decode KV hand-offs' {p50, p90, p99} (null
    without disaggregation); ``network_stall_s``: per step, what the fabric (flow/packet) and link
    jitter add to the analytic step, {p50, p99}; ``network``: the fabric's report at flow/packet."""

    model: str
    system: str
    gpus: int
    requests: int
    completed: int
    output_tokens_per_s: float
    requests_per_s: float
    ttft_s: tuple[tuple[str, float], ...]
    tpot_s: tuple[tuple[str, float], ...]
    e2e_s: tuple[tuple[str, float], ...]
    slo_attainment: float
    slo: tuple[tuple[str, float], ...]
    arrival_rate_per_s: float | None
    seed: int
    preemptions: int
    steps: int
    duration_s: float
    layout: tuple[tuple[str, object], ...]
    fidelity: str = "simulate"
    arrival: str | None = None  # the arrival process (poisson | gamma:CV); None for a replayed request trace
    fits: bool = True
    memory_per_gpu_bytes: float = float("nan")
    memory_capacity_bytes: float = float("nan")
    kv_capacity_tokens: int = 0
    longest_request_tokens: int = 0
    pools: tuple[tuple[str, dict[str, object]], ...] = field(default=(), metadata=EMPTY_AS_NULL)
    # with --kv-pool: {capacity_bytes (the deployment's share), hit_rate, readmissions, bytes_moved,
    # stall_s, name, sharing_gpus}; null without a pool (engine.inference.kv_pool)
    kv_pool: tuple[tuple[str, object], ...] = field(default=(), metadata=EMPTY_AS_NULL)
    energy: tuple[tuple[str, object], ...] = field(default=(), metadata=FLATTEN)  # power_W, ... (cost.energy)
    tpot_p99_over_p50: float = float("nan")
    kv_transfer_s: tuple[tuple[str, float], ...] = field(default=(), metadata=EMPTY_AS_NULL)  # P -> D hand-offs
    network_stall_s: tuple[tuple[str, float], ...] = (("p50", 0.0), ("p99", 0.0))  # per step, fabric + jitter
    network: dict[str, Any] | None = field(default=None, compare=False, metadata=SKIP)  # flow/packet: the fabric
    prefix_hit_rate: float = 0.0
    """Requests that found their whole shared prefix cached / requests (``--shared-prefix``)."""
    prefill_tokens_computed: int = 0
    """Prompt tokens the replicas computed (cached prefixes skipped, recomputation counted)."""
    tokens_per_step: float = float("nan")
    """Tokens decoded per decode step per sequence, measured (1 without ``--speculative``)."""

    def to_json(self) -> dict[str, object]:
        out = contract_json(self)
        if self.network is not None:
            out["network"] = self.network
        return out


@dataclass(frozen=True, slots=True)
class SimulatedInferResult:
    """A static inference batch from the event-driven engine (``fabricsim infer --fidelity simulate``).

    ``infer`` is the ``fabricsim infer`` contract (TTFT from the simulated prefill chunks, TPOT from
    the simulated steady-state decode; ``fidelity`` simulate or flow); with variability,
    ``tpot_s_p50``/``tpot_s_p99`` are percentiles over every simulated token of ``seeds`` runs
    (``tokens_sampled`` intervals) and ``ttft_s_p50``/``ttft_s_p99`` over the runs' batch TTFT.
    ``simulation`` (not serialised) holds the graph and timeline for traces.
    """

    infer: InferResult
    analytic_tpot_s: float
    tpot_s_p50: float | None
    tpot_s_p99: float | None
    seeds: int
    tokens_sampled: int
    folded: tuple[tuple[str, int], ...]
    simulated_ops: int
    simulation: object = field(default=None, compare=False, repr=False)
    analytic_ttft_s: float | None = None
    ttft_s_p50: float | None = None
    ttft_s_p99: float | None = None
    network: dict[str, Any] | None = field(default=None, compare=False)  # flow/packet: the fabric's report

    def to_json(self) -> dict[str, object]:
        out = self.infer.to_json()
        out.update(
            {"analytic_tpot_s": self.analytic_tpot_s, "folded": dict(self.folded), "simulated_ops": self.simulated_ops}
        )
        if self.analytic_ttft_s is not None:
            out["analytic_ttft_s"] = self.analytic_ttft_s
        if self.tpot_s_p50 is not None:
            out.update(
                {
                    "tpot_s_p50": self.tpot_s_p50,
                    "tpot_s_p99": self.tpot_s_p99,
                    "seeds": self.seeds,
                    "tokens_sampled": self.tokens_sampled,
                }
            )
        if self.ttft_s_p50 is not None:
            out.update({"ttft_s_p50": self.ttft_s_p50, "ttft_s_p99": self.ttft_s_p99})
        if self.network is not None:
            out["network"] = self.network
        return out


@dataclass(frozen=True, slots=True)
class TrafficResult:
    """A synthetic traffic pattern on a topology, flow fidelity (``fabricsim traffic``).

    ``throughput_fraction`` is per sending host: bytes / completion / line rate, summarised as
    mean, 1st percentile and min; ``max_link_utilization`` is the peak carried rate / capacity.
    ``failed_links`` cables (both directions) were removed before the run; ``healthy`` then gives
    the same pattern's mean throughput fraction and completion without failures (null if none).
    """

    pattern: str
    topology: str
    routing: str
    seed: int
    hosts: int
    flows: int
    size_bytes: int
    throughput_mean: float
    throughput_p1: float
    throughput_min: float
    completion_time_s: float
    max_link_utilization: float
    events: int
    fidelity: str = "flow"
    failed_links: int = 0
    healthy_throughput_mean: float | None = None
    healthy_completion_time_s: float | None = None
    packet: dict[str, object] | None = None  # the packet fidelity's keys (fct_s, pause_s, ...), merged in

    def to_json(self) -> dict[str, object]:
        return {
            "pattern": self.pattern,
            "topology": self.topology,
            "routing": self.routing,
            "seed": self.seed,
            "hosts": self.hosts,
            "flows": self.flows,
            "size_bytes": self.size_bytes,
            "throughput_fraction": {"mean": self.throughput_mean, "p1": self.throughput_p1, "min": self.throughput_min},
            "completion_time_s": self.completion_time_s,
            "max_link_utilization": self.max_link_utilization,
            "events": self.events,
            "fidelity": self.fidelity,
            "failed_links": self.failed_links,
            "healthy": None
            if self.healthy_throughput_mean is None
            else {
                "throughput_fraction_mean": self.healthy_throughput_mean,
                "completion_time_s": self.healthy_completion_time_s,
            },
            **(self.packet or {}),
        }


@dataclass(frozen=True, slots=True)
class ClusterJobResult:
    """One job of ``fabricsim cluster``: its step time alone on the fabric and shared with the
    other jobs (a training job's step, an inference job's decode step (TPOT), a traffic tenant's
    completion time), and the slowdown shared / alone."""

    name: str
    kind: str
    gpus: int
    placement: str
    alone_s: float
    shared_s: float

    @property
    def slowdown(self) -> float:
        return self.shared_s / self.alone_s

    def to_json(self) -> dict[str, object]:
        return {**contract_json(self), "slowdown": self.slowdown}


@dataclass(frozen=True, slots=True)
class TierLoad:
    """The directed links of one switch tier with every job running: utilisation = the link's carried
    rate (each job's bytes per step / its shared step time, summed) / capacity, the mean over the
    tier's links and the busiest one; ``bytes`` = what one step of every job puts on them."""

    tier: str
    mean_utilization: float
    max_utilization: float
    bytes: float

    def to_json(self) -> dict[str, object]:
        return {"mean_utilization": self.mean_utilization, "max_utilization": self.max_utilization, "bytes": self.bytes}


@dataclass(frozen=True, slots=True)
class ClusterResult:
    """Several jobs on one fabric (``fabricsim cluster``): per job alone vs shared, links by tier."""

    fabric: str
    routing: str
    fidelity: str
    background: str | None
    jobs: tuple[ClusterJobResult, ...]
    links: tuple[TierLoad, ...]

    def to_json(self) -> dict[str, object]:
        out = contract_json(self)
        out["links"] = {load.tier: load.to_json() for load in self.links}
        return out
