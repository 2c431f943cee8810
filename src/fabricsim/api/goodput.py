"""Goodput of a long training run under failures (public API, layer L9).

Gathers what :mod:`fabricsim.reliability` needs from the rest of fabricsim: the component counts
of the system's topology (:func:`fabricsim.topology.inventory.count_inventory`), the checkpoint state from
the memory model (:func:`fabricsim.api.train`'s memory breakdown), the failure rates from the
catalog (``catalog/data/reliability/*.yaml``; by default the set observed on the system's GPU
generation, :func:`default_rate_set`), and the slowdown of a rerouted cable failure from
the flow model (the machinery of ``traffic --fail-links``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from fabricsim import catalog, reliability
from fabricsim.api.training import train
from fabricsim.errors import FabricsimError, parse_choice, unknown_name
from fabricsim.limits import show
from fabricsim.metrics import TrainResult
from fabricsim.network.base import make_flows
from fabricsim.network.flow import FlowNetwork
from fabricsim.reliability import (
    CheckpointPath,
    CheckpointTarget,
    ComponentCounts,
    FailureRates,
    FailureRatesSpec,
    GoodputResult,
    LinkFailurePolicy,
    RunPlan,
    Scenario,
)
from fabricsim.reliability.failures import DAY_S
from fabricsim.reliability.goodput import GoodputEstimate, choose_interval_s, expected_ettr_of
from fabricsim.reliability.montecarlo import check_runs
from fabricsim.specs import SystemSpec
from fabricsim.specs.device import Generation
from fabricsim.specs.inputs import SEED_LIMIT
from fabricsim.topology.graph import NodeKind, cables, remove_links
from fabricsim.topology.inventory import count_inventory
from fabricsim.topology.routing import Routing, route_table, unroutable
from fabricsim.topology.system import build_system_topology

FLOW_PROBE_GPUS = 1024  # GPUs of the topology the rerouting slowdown is measured on (flow model cost)
_PROBE_BYTES = 64 * 2**20  # bytes per probe flow; the completion ratio does not depend on it


def rate_sets() -> list[str]:
    """Names of the shipped failure-rate sets."""
    return sorted(p.stem for p in (catalog.data_root() / "reliability").glob("*.yaml"))


@catalog.cached_load("reliability", maxsize=32)
def load_rates(name_or_path: str) -> FailureRatesSpec:
    """A failure-rate set by catalog name or YAML path, numbers unwrapped and sources kept (a
    YAML file cached until it changes on disk, as the catalog's loads)."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or os.path.exists(name_or_path):  # False for a NUL or an over-long name
        catalog.existing_file(path, "failure-rates", "give a rate-set name or a file")
    elif name_or_path in rate_sets():
        path = catalog.data_root() / "reliability" / f"{name_or_path}.yaml"
    else:
        raise unknown_name("failure-rates", name_or_path, rate_sets())
    data, sources = catalog.unwrap_sources(catalog.read_yaml(path, "failure-rates"))
    data.setdefault("name", path.stem)
    try:
        return FailureRatesSpec.model_validate({**data, "sources": sources})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise FabricsimError("failure-rates", f"{path}: {where}: {error['msg']}", "fix that key") from None


def default_rate_set(system: SystemSpec) -> tuple[str, str]:
    """(name, basis) of the shipped rate set for the GPUs of ``system``: the one observed on its
    device generation (Llama 3's H100 events for Hopper, Meta's RSC-1 for Ampere); for a generation
    no set was observed on, the newest generation's set, and the basis says so."""
    generation = system.device.generation
    observed = {g: name for name in rate_sets() for g in load_rates(name).generations}
    if generation in observed:
        return observed[generation], f"{generation.value} GPUs"
    newest = max(observed, key=list(Generation).index)
    return observed[newest], f"no published {generation.value} rates: {newest.value}'s"


@catalog.cached_load("systems", maxsize=64)
def component_counts(system: str, gpus: int) -> ComponentCounts:
    """GPUs, hosts and NICs of ``gpus`` GPUs of ``system``; scale-out switches and cables counted
    on the topology its builder makes (scale-up NVSwitch domains are inside the host causes).
    Cached as the catalog's loads: a system YAML until it, or a device file it names, changes."""
    spec = catalog.load_system(system)
    counted = count_inventory(build_system_topology(spec, gpus))
    scale_out_cables = sum(count for kind, count in counted.cables if kind not in ("host", "scale-up"))
    return ComponentCounts(
        gpus=gpus,
        hosts=spec.nodes(gpus),
        nics=counted.nics,
        switches=counted.switches,
        cables=scale_out_cables,
        fabric_cables=scale_out_cables - counted.cable_count("access"),
    )


def _positive_number(field: str, value: object, maximum: float) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise FabricsimError(field, f"must be a number, got {value!r}") from None
    if not (math.isfinite(number) and 0 < number <= maximum):
        raise FabricsimError(field, f"must be a finite number in (0, {maximum:g}], got {value!r}")
    return number


def _interval(value: str | float) -> float | None:
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    return _positive_number("checkpoint-interval", value, 1e9)


def _checkpoint_path(result: TrainResult, system: SystemSpec, pfs_Bps: float) -> CheckpointPath:
    memory = dict(result.memory_breakdown_bytes)
    layout = dict(result.layout)
    replicas = int(layout["dp"]) * int(layout["cp"])  # the ranks holding the same weights
    state = reliability.unique_state_bytes(
        memory["weights"], memory["optimizer_states"], result.gpus, replicas, int(layout["zero"])
    )
    per_node = min(system.gpus_per_node, result.gpus)
    nic_Bps = system.scale_out.bandwidth_per_node_Bps / per_node
    return CheckpointPath(state, result.gpus, pfs_Bps, system.host_link.bandwidth_Bps, nic_Bps)


def rerouted_completion_ratio(system: str, gpus: int, seed: int) -> float:
    """Healthy / degraded completion time of a bisection shift (GPU g sends to GPU g + n/2, so every
    flow crosses the fabric's middle) on the system's topology at n = ``min(gpus, FLOW_PROBE_GPUS)``
    GPUs, with one switch-to-switch cable (drawn with ``seed``) removed; adaptive routing, as on
    AI fabrics that route around failures. A collective is paced by its slowest flow, so the ratio
    of completion times is its slowdown. 1.0 when the topology has no such cable."""
    spec = catalog.load_system(system)
    probe = min(gpus, FLOW_PROBE_GPUS)
    topo = build_system_topology(spec, probe)
    pairs = cables(topo)
    kinds = topo.node_kind[topo.link_src[pairs]]
    spare = pairs[(kinds == NodeKind.SWITCH).all(axis=1)]
    if spare.shape[0] == 0:
        return 1.0
    ids = np.arange(probe)
    flows = make_flows(ids, (ids + probe // 2) % probe, float(_PROBE_BYTES))
    failed = remove_links(topo, spare[np.random.default_rng(seed).integers(spare.shape[0])])
    table = route_table(failed)
    if unroutable(table, flows.src, flows.dst).any():  # cannot happen on a Clos; treat as stopped
        return 0.0
    healthy = FlowNetwork(route_table(topo), Routing.ADAPTIVE, seed).run(flows).completion_time_s
    degraded = FlowNetwork(table, Routing.ADAPTIVE, seed).run(flows).completion_time_s
    return min(1.0, healthy / degraded)


def _degraded_fraction(result: TrainResult, ratio: float) -> float:
    """Step-time fraction kept while a cable is rerouted: scale-out communication (dp, pp, cp, ep)
    slows by ``ratio``; compute and NVLink (tp) traffic do not."""
    times = dict(result.time_breakdown_s)
    scale_out_s = sum(times.get(key, 0.0) for key in ("dp_comm_s", "pp_comm_s", "cp_comm_s", "ep_comm_s"))
    if ratio <= 0:
        return 0.0
    return result.step_time_s / (result.step_time_s + scale_out_s * (1.0 / ratio - 1.0))


RESTART_PHASES = ("detection", "reschedule", "startup", "warmup")


def _with_restart(rates: FailureRatesSpec, restart: Mapping[str, float] | None) -> FailureRatesSpec:
    """``rates`` with some restart phases replaced (``{"detection": 60, ...}``, seconds)."""
    if not restart:
        return rates
    for phase, value in restart.items():
        if phase not in RESTART_PHASES:
            raise unknown_name("restart", str(phase), RESTART_PHASES)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e9:
            raise FabricsimError("restart", f"{phase} must be a number of seconds in [0, 1e9), got {value!r}")
    phases = rates.restart.model_copy(update={f"{phase}_s": float(v) for phase, v in restart.items()})
    return rates.model_copy(update={"restart": phases})


@dataclass(frozen=True, slots=True)
class GoodputOptions:
    """The validated goodput inputs other than the model, system and layout."""

    rates: FailureRatesSpec
    rates_basis: str  # why this rate set: given, or the system's GPU generation
    interval_s: float | None
    target: CheckpointTarget
    policy: LinkFailurePolicy
    pfs_Bps: float
    plan: RunPlan


def goodput_options(
    days: float,
    checkpoint_interval: str | float = "auto",
    checkpoint_target: str = "pfs",
    link_failures: str = "reroute",
    **more: Any,
) -> GoodputOptions:
    """Parse and check the options of :func:`goodput` (``more``: system, failure_rates,
    pfs_bandwidth_Bps, restart, runs, seed), each error naming its field. Without ``failure_rates``
    the rate set is the one of ``system``'s GPU generation (:func:`default_rate_set`)."""
    unknown = set(more) - {"system", "failure_rates", "pfs_bandwidth_Bps", "restart", "runs", "seed"}
    if unknown:
        raise FabricsimError(sorted(unknown)[0], "is not a goodput option")
    runs, seed = more.get("runs", 1000), more.get("seed", 0)
    days_value = _positive_number("days", days, 100_000)
    check_runs(runs)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise FabricsimError("seed", f"must be an integer in 0..2^63-1, got {show(seed)}", "give a smaller seed")
    rates_name, basis = more.get("failure_rates"), "given"
    if rates_name is None:
        rates_name, basis = default_rate_set(catalog.load_system(more["system"]))
    rates_spec = _with_restart(load_rates(rates_name), more.get("restart"))
    launch_s = rates_spec.restart.cost().total_s(0.0)
    if days_value * DAY_S < launch_s:  # known before any layout: the restart phases alone
        problem = f"a run of {days_value:.3g} days is shorter than its launch ({launch_s:.4g} s of restart phases)"
        raise FabricsimError("days", problem, f"give at least {launch_s / DAY_S:.3g}")
    pfs_Bps = rates_spec.storage.pfs_bandwidth_Bps
    if more.get("pfs_bandwidth_Bps") is not None:
        pfs_Bps = _positive_number("pfs-bandwidth", more["pfs_bandwidth_Bps"], 1e18)
    return GoodputOptions(
        rates=rates_spec,
        rates_basis=basis,
        interval_s=_interval(checkpoint_interval),
        target=parse_choice("checkpoint-target", checkpoint_target, CheckpointTarget),
        policy=parse_choice("link-failures", link_failures, LinkFailurePolicy),
        pfs_Bps=pfs_Bps,
        plan=RunPlan(days_value, runs, seed),
    )


@dataclass(frozen=True, slots=True)
class GoodputSetup:
    """What one (system, GPUs, options) fixes, whatever the layout."""

    system: SystemSpec
    counts: ComponentCounts
    cluster: FailureRates
    completion_ratio: float
    options: GoodputOptions


def goodput_setup(system: str, gpus: int, options: GoodputOptions) -> GoodputSetup:
    """Counts, cluster rates and the rerouting slowdown of ``gpus`` GPUs of ``system``."""
    counts = component_counts(system, gpus)
    reference = options.rates.reference
    causes = reliability.rates(options.rates, component_counts(reference.system, reference.gpus))
    cluster = reliability.cluster_rates(causes, counts, options.policy)
    ratio = 1.0
    if cluster.degrade_rate_per_s > 0:
        ratio = rerouted_completion_ratio(system, gpus, options.plan.seed)
    return GoodputSetup(catalog.load_system(system), counts, cluster, ratio, options)


def _require_fit(step: TrainResult) -> None:
    if not step.fits:
        layout_text = ", ".join(f"{k}={v}" for k, v in step.layout)
        raise FabricsimError("layout", f"{layout_text} does not fit in GPU memory", "raise --tp/--pp or --zero")


def _check_run(step: TrainResult, scenario: Scenario, plan: RunPlan) -> None:
    """Refuse a checkpoint interval or a run length the run cannot have, instead of silently
    changing it (an interval of 5e-324 s ran as one step) or reporting an ETTR of 0 by construction.

    * An interval shorter than one step: checkpoints are taken between steps. Shorter than the
      overlapped persist: a snapshot cannot start before the previous one is durable.
    * A run shorter than its launch (the restart phases and the checkpoint load), one interval
      and its blocking checkpoint keeps no work at all (:mod:`fabricsim.reliability.montecarlo`).
    """
    given = scenario.interval_s
    floor_s = max(step.step_time_s, scenario.checkpoint.overlapped_s)
    if given is not None and given < floor_s:
        why = "one training step" if floor_s == step.step_time_s else "the time a checkpoint takes to persist"
        problem = f"{given:.3g} s is shorter than {why} ({floor_s:.3g} s)"
        raise FabricsimError("checkpoint-interval", problem, f"give at least {floor_s:.4g} or auto")
    if given is None and scenario.rates.total_per_s == 0:
        return  # no failures: auto checkpoints once, at the end of the run
    interval_s = choose_interval_s(scenario, step.step_time_s, plan.days)
    first_s = scenario.restart.total_s(scenario.checkpoint.load_s) + interval_s + scenario.checkpoint.blocking_s
    if plan.days * DAY_S < first_s:
        problem = (f"a run of {plan.days:.3g} days ends before its launch and first checkpoint "
                   f"({first_s:.4g} s at a {interval_s:.4g} s interval): it would keep no work")
        raise FabricsimError("days", problem, f"give at least {first_s / DAY_S:.3g} or a shorter interval")


def _scenario(step: TrainResult, setup: GoodputSetup) -> Scenario:
    """The failure scenario of one layout (its state bytes and its scale-out share of the step)."""
    options = setup.options
    degradation = reliability.Degradation(options.rates.link_repair_s, _degraded_fraction(step, setup.completion_ratio))
    cost = reliability.checkpoint_cost(_checkpoint_path(step, setup.system, options.pfs_Bps), options.target)
    return Scenario(setup.cluster, cost, options.rates.restart.cost(), degradation, options.interval_s)


def goodput(
    model: str,
    system: str,
    gpus: int,
    global_batch: int,
    seq_len: int,
    *,
    days: float,
    checkpoint_interval: str | float = "auto",
    checkpoint_target: str = "pfs",
    link_failures: str = "reroute",
    failure_rates: str | None = None,
    pfs_bandwidth_Bps: float | None = None,
    restart: Mapping[str, float] | None = None,
    runs: int = 1000,
    seed: int = 0,
    **layout: Any,
) -> GoodputResult:
    """Interruptions, checkpoint interval and costs, ETTR and goodput of ``days`` of training
    ``model`` on ``gpus`` GPUs of ``system`` (``layout`` takes :func:`train`'s keywords: tp, pp,
    ...). Failure rates come from the rate set ``failure_rates`` (default: the set observed on the
    system's GPU generation); ``checkpoint_interval`` is
    "auto" (Daly's optimum) or seconds; ``restart`` replaces restart phases of the rate set
    (detection, reschedule, startup, warmup: seconds); ``runs`` seeded Monte-Carlo runs give the spread."""
    options = goodput_options(
        days,
        checkpoint_interval,
        checkpoint_target,
        link_failures,
        system=system,
        failure_rates=failure_rates,
        pfs_bandwidth_Bps=pfs_bandwidth_Bps,
        restart=restart,
        runs=runs,
        seed=seed,
    )
    step = train(model, system, gpus, global_batch, seq_len, **layout)
    setup = goodput_setup(system, gpus, options)
    scenario = _scenario(step, setup)
    _check_run(step, scenario, options.plan)  # the numbers first, then whether the layout fits
    _require_fit(step)
    training = reliability.Training(step.step_time_s, step.tokens_per_s, gpus)
    return _result(step, (setup, scenario), reliability.estimate(scenario, training, options.plan))


def expected_goodput(step: TrainResult, setup: GoodputSetup) -> tuple[float, float, float]:
    """(goodput tokens/s, expected ETTR, checkpoint interval s) of one layout, closed form only:
    what the planner ranks by (no Monte-Carlo)."""
    _require_fit(step)
    scenario = _scenario(step, setup)
    interval_s = choose_interval_s(scenario, step.step_time_s, setup.options.plan.days)
    ettr = expected_ettr_of(scenario, interval_s)
    return step.tokens_per_s * ettr, ettr, interval_s


def ocs_blast_radius(setup: GoodputSetup, gpus: int, restart_s: float) -> reliability.CubeBlastRadius | None:
    """What a failed cube costs ``gpus`` chips of an OCS pod (tpu-v5p, tpu7x) with and without the
    OCS (:mod:`fabricsim.reliability.ocs`), from the run's failure-rate set and restart time; None on
    other systems and for a job of less than whole 4x4x4 cubes."""
    from fabricsim.planner.slice import PODS
    from fabricsim.reliability.ocs import CUBE_CHIPS, Pod, blast_radius

    system = setup.system
    pod = PODS.get(system.name)
    if pod is None or not system.scale_up.torus or gpus % CUBE_CHIPS:
        return None
    hosts = CUBE_CHIPS // system.gpus_per_node
    # without OCS the pod is one statically wired torus (as the TPU v3 pod was): its chips are the blast radius
    shape = Pod(pod.max_chips // CUBE_CHIPS, hosts, hosts * system.scale_out.nics_per_node, pod.max_chips)
    reference = setup.options.rates.reference
    causes = reliability.rates(setup.options.rates, component_counts(reference.system, reference.gpus))
    return blast_radius(gpus, shape, causes, restart_s)


def _result(step: TrainResult, inputs: tuple[GoodputSetup, Scenario], estimate: GoodputEstimate) -> GoodputResult:
    setup, scenario = inputs
    samples, plan, cluster, options = estimate.samples, setup.options.plan, setup.cluster, setup.options
    ettr = reliability.summary(samples.ettr)
    by_cause = samples.by_cause.mean(axis=0)
    return GoodputResult(
        model=step.model,
        system=step.system,
        gpus=step.gpus,
        days=plan.days,
        runs=plan.runs,
        seed=plan.seed,
        failure_rates=options.rates.name,
        failure_rates_basis=options.rates_basis,
        checkpoint_target=options.target.value,
        link_failures=options.policy.value,
        components=setup.counts,
        interruptions=reliability.summary(samples.interruptions),
        interruptions_by_cause=tuple((name, float(v)) for name, v in zip(cluster.names, by_cause, strict=True)),
        rerouted_link_failures=float(samples.degradations.mean()),
        mttf_s=cluster.mttf_s,
        checkpoint_bytes=scenario.checkpoint.state_bytes,
        checkpoint_interval_s=estimate.interval_s,
        checkpoint_time_s=scenario.checkpoint.blocking_s,
        checkpoint_overlapped_s=scenario.checkpoint.overlapped_s,
        checkpoint_load_s=scenario.checkpoint.load_s,
        restart_time_s=estimate.restart_s,
        degraded_throughput_fraction=scenario.degradation.throughput_fraction,
        ettr=ettr,
        ettr_expected=estimate.expected_ettr,
        step_time_s=step.step_time_s,
        tokens_per_s=step.tokens_per_s,
        goodput_tokens_per_s=step.tokens_per_s * ettr["mean"],
        lost_gpu_hours=step.gpus * plan.days * 24.0 * (1.0 - ettr["mean"]),
        ocs=ocs_blast_radius(setup, step.gpus, estimate.restart_s),
    )
