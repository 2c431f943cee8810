"""A system calibrated from nccl-tests runs (layer L8): measured lines per (op, group) plus the
effective bandwidth of the tier each run crosses, as a system document and a SystemSpec.

Two things are fitted, both from link-level measurements (nccl-tests), never from end-to-end runs:

* per run, the alpha-beta lines of :func:`fabricsim.calibration.fit.fit_lines`; the collective
  model uses them for a group of exactly that op, rank count and node count;
* per tier, one effective bandwidth: the NIC bandwidth (runs across nodes) or the scale-up
  bandwidth per GPU (runs inside one node) at which the uncalibrated collective model gives the
  run's largest-size time (bisection; the model time is monotone in the bandwidth). Other group
  shapes then use the model with that figure. A run whose time the model cannot reach by this
  tier alone (another tier is the bottleneck) leaves the figure as it was, and says so.

Latencies are not written into link figures: NCCL's per-hop latencies (data/nccl_*.yaml) are not
separable from a sweep's latency floor, which the measured lines carry instead.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsim.calibration.fit import FitResult, fit_lines
from fabricsim.calibration.measurements import NcclTestsRun
from fabricsim.collectives import CollectiveOp, estimate, place_group
from fabricsim.errors import FabricsimError
from fabricsim.specs import CollectiveFit, SystemSpec

_BISECTION_STEPS = 80
_TIER_PREFERENCE = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "reduce", "send-recv")


@dataclass(frozen=True, slots=True)
class TierFit:
    """The fitted figure of one tier: ``field`` (dotted YAML path), its value (bytes/s), the run used."""

    tier: str
    field: str
    bandwidth_Bps: float | None
    base_Bps: float
    source: str
    note: str


@dataclass(frozen=True, slots=True)
class CalibratedSystem:
    """The calibrated spec, the YAML document to write, and each run's fit."""

    spec: SystemSpec
    document: dict[str, Any]
    runs: tuple[NcclTestsRun, ...]
    fits: tuple[FitResult, ...]
    tiers: tuple[TierFit, ...]


def check_run(system: SystemSpec, run: NcclTestsRun) -> None:
    """Refuse a run whose ranks/hosts the system cannot place as the log did (stride 1)."""
    if run.ranks % run.nodes:
        raise FabricsimError(
            "log",
            f"{run.source}: {run.ranks} ranks on {run.nodes} hosts is uneven",
            "calibrate from runs with the same number of GPUs per host",
        )
    nodes = system.nodes(run.ranks)
    if nodes != run.nodes or run.ranks // run.nodes > system.gpus_per_node:
        raise FabricsimError(
            "system",
            f"{run.source} ran {run.ranks} ranks on {run.nodes} hosts, {system.name} puts them on {nodes}",
            f"use a system with {run.ranks // run.nodes} GPUs per node",
        )


def _model_time_s(system: SystemSpec, run: NcclTestsRun) -> float:
    group = place_group(system, run.ranks)
    return estimate(CollectiveOp(run.op), run.rows[-1].size_bytes, group).time_s


def _with_bandwidth(system: SystemSpec, tier: str, bandwidth_Bps: float) -> SystemSpec:
    if tier == "scale_out":
        nic = system.scale_out.nic.model_copy(update={"bandwidth_Bps": bandwidth_Bps})
        return system.model_copy(update={"scale_out": system.scale_out.model_copy(update={"nic": nic})})
    return system.model_copy(update={"scale_up": system.scale_up.model_copy(update={"bandwidth_Bps": bandwidth_Bps})})


def fit_tier_Bps(system: SystemSpec, run: NcclTestsRun, tier: str) -> float | None:
    """The ``tier`` bandwidth (bytes/s) at which the uncalibrated model times the run's largest
    size as measured, or None when even 1000x the base bandwidth is too slow (another tier binds)."""
    plain = system.model_copy(update={"collective_fits": ()})
    base = plain.scale_out.nic.bandwidth_Bps if tier == "scale_out" else plain.scale_up.bandwidth_Bps
    measured = run.rows[-1].time_s
    lo, hi = base * 1e-4, base * 1e3
    if _model_time_s(_with_bandwidth(plain, tier, hi), run) > measured:
        return None
    if _model_time_s(_with_bandwidth(plain, tier, lo), run) < measured:
        return lo
    for _ in range(_BISECTION_STEPS):  # geometric bisection: time falls as bandwidth grows
        mid = (lo * hi) ** 0.5
        if _model_time_s(_with_bandwidth(plain, tier, mid), run) > measured:
            lo = mid
        else:
            hi = mid
    return hi


def _tier_runs(runs: tuple[NcclTestsRun, ...]) -> dict[str, NcclTestsRun]:
    out: dict[str, NcclTestsRun] = {}
    for run in sorted(runs, key=lambda r: (_TIER_PREFERENCE.index(r.op), -r.ranks)):
        out.setdefault("scale_out" if run.nodes > 1 else "scale_up", run)
    return out


def _tier_fits(system: SystemSpec, runs: tuple[NcclTestsRun, ...]) -> tuple[TierFit, ...]:
    fits = []
    for tier, run in _tier_runs(runs).items():
        field = "scale_out.nic.bandwidth_Bps" if tier == "scale_out" else "scale_up.bandwidth_Bps"
        base = system.scale_out.nic.bandwidth_Bps if tier == "scale_out" else system.scale_up.bandwidth_Bps
        value = fit_tier_Bps(system, run, tier)
        size = run.rows[-1].size_bytes
        source = (
            f"calibrated from {run.source}: {run.op} on {run.ranks} ranks / {run.nodes} nodes, "
            f"the bandwidth at which the model gives the measured {run.rows[-1].time_s * 1e6:.1f} us at {size} B"
        )
        note = "" if value is not None else f"{run.source}: this tier is not the bottleneck; kept the base figure"
        fits.append(TierFit(tier, field, value, base, source, note))
    return tuple(fits)


def _fit_document(run: NcclTestsRun, fit: FitResult) -> dict[str, Any]:
    source = f"calibrated from {run.source} ({run.op}, {run.ranks} ranks on {run.nodes} nodes)"
    lines = [
        {
            "latency_s": {"value": line.latency_s, "source": source},
            "bandwidth_Bps": {"value": line.bandwidth_Bps, "source": source},
            "min_bytes": line.min_bytes,
            "max_bytes": line.max_bytes,
        }
        for line in fit.lines
    ]
    return {
        "op": run.op,
        "ranks": run.ranks,
        "nodes": run.nodes,
        "lines": lines,
        "measured_sizes_bytes": [row.size_bytes for row in run.rows],
        "measured_time_s": {"value": [row.time_s for row in run.rows], "source": f"{run.source} (out-of-place time)"},
    }


def _document(
    raw: dict[str, Any], system: SystemSpec, name: str, tiers: tuple[TierFit, ...], fits: list[dict[str, Any]]
) -> dict[str, Any]:
    doc = copy.deepcopy(raw)
    doc["name"] = name
    doc["description"] = f"{system.name} calibrated from nccl-tests ({system.description})".strip()
    for tier in tiers:
        if tier.bandwidth_Bps is None:
            continue
        figure = {"value": tier.bandwidth_Bps, "source": tier.source}
        if tier.tier == "scale_up":
            doc.setdefault("scale_up", {})["bandwidth_Bps"] = figure
            continue
        nic = system.scale_out.nic
        latency_source = nic.sources.get("latency_s", f"as link {nic.name}")
        doc.setdefault("scale_out", {})["nic"] = {
            "name": f"{nic.name}-calibrated",
            "kind": nic.kind.value,
            "bandwidth_Bps": figure,
            "latency_s": {"value": nic.latency_s, "source": latency_source},
        }
    doc["collective_fits"] = fits
    return doc


def calibrate_system(
    system: SystemSpec, raw: dict[str, Any], runs: tuple[NcclTestsRun, ...], out_name: str
) -> CalibratedSystem:
    """Calibrate ``system`` (its YAML document ``raw``) from ``runs``; the result is named ``out_name``."""
    if not runs:
        raise FabricsimError("log", "no nccl-tests log given", "pass one or more log files")
    seen: set[tuple[str, int, int]] = set()
    for run in runs:
        check_run(system, run)
        key = (run.op, run.ranks, run.nodes)
        if key in seen:
            raise FabricsimError(
                "log",
                f"two logs measure {run.op} on {run.ranks} ranks / {run.nodes} nodes",
                "give one log per op and group",
            )
        seen.add(key)
    fits = tuple(fit_lines([r.size_bytes for r in run.rows], [r.time_s for r in run.rows]) for run in runs)
    tiers = _tier_fits(system, runs)
    spec = system
    for tier in tiers:
        if tier.bandwidth_Bps is not None:
            spec = _with_bandwidth(spec, tier.tier, tier.bandwidth_Bps)
    collective_fits = tuple(
        CollectiveFit(
            op=run.op,  # type: ignore[arg-type]
            ranks=run.ranks,
            nodes=run.nodes,
            lines=fit.lines,
            measured_sizes_bytes=tuple(row.size_bytes for row in run.rows),
            measured_time_s=tuple(row.time_s for row in run.rows),
        )
        for run, fit in zip(runs, fits, strict=True)
    )
    spec = spec.model_copy(update={"name": out_name, "collective_fits": collective_fits})
    documents = [_fit_document(run, fit) for run, fit in zip(runs, fits, strict=True)]
    return CalibratedSystem(spec, _document(raw, system, out_name, tiers, documents), runs, fits, tiers)


def output_name(path: str) -> str:
    """The system name a calibrated file gets: its file name without the extension."""
    return Path(path).stem
