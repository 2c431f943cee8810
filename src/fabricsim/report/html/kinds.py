"""One builder per kind of result (layer L10): which numbers and charts each JSON gets.

:func:`kind_of` recognises a result by its JSON contract keys (DESIGN.md); each builder takes the
result's index ``i`` in the report (the first component of every ``data-key``) and the result.
Values a chart needs are read through :mod:`fabricsim.report.html.fields`, so a malformed result
raises :class:`~fabricsim.report.html.fields.MalformedError` naming the key instead of a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from fabricsim.report.html.cluster import cluster
from fabricsim.report.html.fields import MalformedError, mapping, number, numbers, optional, records, required
from fabricsim.report.html.page import numbers_table, paragraph
from fabricsim.report.html.svg import Series, bar_chart, timeline_chart, xy_chart

Result = dict[str, Any]


def _rows(i: int, result: Result, fields: list[tuple[str, str, str]], prefix: str = "") -> str:
    """A numbers table of (label, dotted key, unit) fields that the result has; ``prefix`` is the
    path of ``result`` inside result ``i`` (for nested parts such as a validation suite)."""
    rows = []
    for label, key, unit in fields:
        value: Any = result
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            rows.append((label, f"{i}.{prefix}{key}", value, unit))
    return numbers_table(rows)


def _breakdown(title: str, mapping: dict[str, float], unit: str, scale: float = 1.0) -> str:
    items = [(key, float(value) * scale) for key, value in sorted(mapping.items()) if value]
    return bar_chart(title, items, unit) if items else paragraph(f"{title}: all zero")


def train(i: int, result: Result) -> str:
    parts = [
        _rows(
            i,
            result,
            [
                ("step time", "step_time_s", "s"),
                ("tokens/s", "tokens_per_s", "tok/s"),
                ("MFU", "mfu", ""),
                ("memory per GPU", "memory_per_gpu_bytes", "B"),
                ("memory capacity", "memory_capacity_bytes", "B"),
                ("fidelity", "fidelity", ""),
            ],
        )
    ]
    times = numbers(result.get("time_breakdown_s"), "time_breakdown_s")
    parts.append(_breakdown("time breakdown per step (s)", times, "s"))
    memory = numbers(result.get("memory_breakdown_bytes"), "memory_breakdown_bytes")
    parts.append(_breakdown("memory per GPU (GB)", memory, "GB", 1e-9))
    if "exposed_comm_s" in result:
        busy = numbers(result.get("comm_busy_s"), "comm_busy_s")
        exposed = numbers(result["exposed_comm_s"], "exposed_comm_s")
        items = [(f"{k} busy", busy.get(k, 0.0)) for k in sorted(busy)] + [
            (f"{k} exposed", exposed[k]) for k in sorted(exposed)
        ]
        parts.append(bar_chart("communication: busy vs exposed (s, simulated)", items, "s"))
    return "\n".join(parts)


def infer(i: int, result: Result) -> str:
    parts = [
        _rows(
            i,
            result,
            [
                ("TTFT", "ttft_s", "s"),
                ("TPOT", "tpot_s", "s"),
                ("end to end", "e2e_latency_s", "s"),
                ("batch", "batch", ""),
                ("output tokens/s", "output_tokens_per_s", "tok/s"),
                ("memory per GPU", "memory_per_gpu_bytes", "B"),
            ],
        )
    ]
    parts.append(_breakdown("time breakdown (s)", numbers(result.get("time_breakdown_s"), "time_breakdown_s"), "s"))
    return "\n".join(parts)


def _percentiles(result: Result, key: str) -> list[tuple[str, float]]:
    stats = mapping(result.get(key), key)
    return [(f"{key} {p}", number(stats[p], f"{key}.{p}")) for p in ("p50", "p90", "p99") if stats.get(p) is not None]


def serve(i: int, result: Result) -> str:
    fields = [
        ("requests", "requests", ""),
        ("output tokens/s", "output_tokens_per_s", "tok/s"),
        ("requests/s", "requests_per_s", "req/s"),
        ("SLO attainment", "slo_attainment", ""),
    ]
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        fields += [(f"{key[:-2].upper()} {p}", f"{key}.{p}", "s") for p in ("p50", "p90", "p99")]
    parts = [_rows(i, result, fields)]
    for key, title in (("ttft_s", "TTFT distribution (s)"), ("tpot_s", "TPOT distribution (s)")):
        items = _percentiles(result, key)
        if items:
            parts.append(bar_chart(title, items, "s"))
    return "\n".join(parts)


def plan(i: int, result: Result) -> str:
    plans = records(result.get("plans"), "plans")
    parts = [
        _rows(
            i,
            result,
            [("layouts evaluated", "evaluated", ""), ("feasible", "feasible", ""), ("search time", "elapsed_s", "s")],
        )
    ]
    rate = "tokens_per_s" if any("tokens_per_s" in p for p in plans) else "output_tokens_per_s"
    ranked = [
        (
            f"#{p.get('rank', k + 1)} {_layout(mapping(p.get('layout'), f'plans.{k}.layout'))}",
            optional(p, rate, 0.0, f"plans.{k}.{rate}"),
        )
        for k, p in enumerate(plans)
    ]
    if ranked:
        parts.append(bar_chart(f"ranked layouts: {rate}", ranked, "tok/s"))
        points = [
            (optional(p, "memory_per_gpu_bytes", 0.0, f"plans.{k}.memory_per_gpu_bytes") / 1e9, rate_s)
            for k, (p, (_, rate_s)) in enumerate(zip(plans, ranked, strict=True))
        ]
        front = pareto_front(points)
        parts.append(
            xy_chart(
                "layouts: memory per GPU vs throughput; line = Pareto front",
                [Series("layouts", tuple(points), "points"), Series("Pareto front", tuple(front))],
                ("memory per GPU (GB)", rate),
            )
        )
        rows = [
            (f"#{p.get('rank', k + 1)} step time", f"{i}.plans.{k}.step_time_s", p.get("step_time_s"), "s")
            for k, p in enumerate(plans)
            if "step_time_s" in p
        ]
        parts.append(numbers_table(rows))
    return "\n".join(parts)


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points not dominated in (less memory, more throughput), by memory ascending."""
    front: list[tuple[float, float]] = []
    for memory, rate in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or rate > front[-1][1]:
            front.append((memory, rate))
    return front


def _layout(layout: dict[str, Any]) -> str:
    keys = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero")
    return " ".join(f"{k}{layout[k]}" for k in keys if k in layout and (layout[k] not in (1, 0, None) or k == "tp"))


def traffic(i: int, result: Result) -> str:
    parts = [
        _rows(
            i,
            result,
            [
                ("hosts", "hosts", ""),
                ("flows", "flows", ""),
                ("completion time", "completion_time_s", "s"),
                ("max link utilisation", "max_link_utilization", ""),
                ("throughput fraction mean", "throughput_fraction.mean", ""),
                ("throughput fraction p1", "throughput_fraction.p1", ""),
                ("throughput fraction min", "throughput_fraction.min", ""),
            ],
        )
    ]
    fraction = mapping(result.get("throughput_fraction"), "throughput_fraction")
    items = [
        (f"throughput {k}", number(fraction[k], f"throughput_fraction.{k}"))
        for k in ("mean", "p1", "min")
        if fraction.get(k) is not None
    ]
    items.append(("max link utilisation", optional(result, "max_link_utilization", 0.0)))
    parts.append(bar_chart("link utilisation and per-host throughput (fraction of line rate)", items, ""))
    fct = result.get("fct_s")
    if isinstance(fct, list) and fct:
        values = sorted(number(v, f"fct_s.{k}") for k, v in enumerate(fct))
        cdf = tuple((v, (k + 1) / len(values)) for k, v in enumerate(values))
        parts.append(xy_chart("flow completion time CDF", [Series("FCT", cdf, "step")], ("FCT (s)", "fraction")))
    elif isinstance(fct, dict) and fct:
        parts.append(bar_chart("flow completion time (s)", sorted(numbers(fct, "fct_s").items()), "s"))
    return "\n".join(parts)


def validate(i: int, result: Result) -> str:
    parts = []
    for k, suite in enumerate(records(result.get("suites"), "suites")):
        entries = records(suite.get("entries"), f"suites.{k}.entries")
        parts.append(f"<h3>{escape(str(suite.get('name', '')))}</h3>")
        parts.append(_rows(i, suite, [("mean |error|", "mean_abs_error", "")], prefix=f"suites.{k}."))
        by_unit: dict[str, list[tuple[float, float]]] = {}
        for j, entry in enumerate(entries):
            where = f"suites.{k}.entries.{j}."
            by_unit.setdefault(str(entry.get("unit", "")), []).append(
                (required(entry, "measured", where + "measured"), required(entry, "predicted", where + "predicted"))
            )
        for unit, points in sorted(by_unit.items()):
            positive = all(x > 0 and y > 0 for x, y in points)
            spread = positive and max(max(p) for p in points) / min(min(p) for p in points) > 100
            parts.append(
                xy_chart(
                    f"{suite.get('name', '')}: predicted vs measured ({unit})",
                    [Series("entries", tuple(points), "points")],
                    (f"measured ({unit})", f"predicted ({unit})"),
                    (spread, spread),
                    diagonal=True,
                )
            )
    return "\n".join(parts)


def collective(i: int, result: Result) -> str:
    parts = [
        _rows(
            i,
            result,
            [
                ("time", "time_s", "s"),
                ("algbw", "algbw_GBps", "GB/s"),
                ("busbw", "busbw_GBps", "GB/s"),
                ("algorithm", "algorithm", ""),
                ("protocol", "protocol", ""),
            ],
        )
    ]
    parts.append(
        bar_chart(
            "bandwidth (GB/s)",
            [("algbw", required(result, "algbw_GBps")), ("busbw", required(result, "busbw_GBps"))],
            "GB/s",
        )
    )
    return "\n".join(parts)


_RESIDUAL_KEYS = ("size_bytes", "measured_busbw_GBps", "predicted_busbw_GBps")


def calibration(i: int, result: Result) -> str:
    summary = [
        ("median |error| >= 1 MiB", "summary_from_1MiB.median_abs_error", ""),
        ("max |error| >= 1 MiB", "summary_from_1MiB.max_abs_error", ""),
    ]
    parts = [_rows(i, result, summary)]
    by_op: dict[str, list[tuple[float, float, float]]] = {}
    for j, r in enumerate(records(result.get("residuals"), "residuals")):
        if not isinstance(r.get("op"), str):
            raise MalformedError(f"residuals.{j}.op", "is not an operation name")
        by_op.setdefault(r["op"], []).append(
            tuple(required(r, key, f"residuals.{j}.{key}") for key in _RESIDUAL_KEYS)  # type: ignore[arg-type]
        )
    for op, mine in sorted(by_op.items()):
        measured = tuple((size, value) for size, value, _ in mine)
        predicted = tuple((size, value) for size, _, value in mine)
        parts.append(
            xy_chart(
                f"{op}: busbw, measured vs calibrated",
                [Series("measured", measured, "points"), Series("calibrated model", predicted)],
                ("size (B)", "busbw (GB/s)"),
                (True, False),
            )
        )
    return "\n".join(parts)


def _track(value: Any) -> Any:
    """A pid or tid as a dict key: JSON scalars as they are, anything else as its text."""
    return value if value is None or isinstance(value, (str, int, float)) else repr(value)


def _meta_names(events: list[Any], kind: str) -> dict[Any, Any]:
    """(pid, tid) -> name of the ``thread_name`` / ``process_name`` metadata events."""
    out = {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == kind:
            args = e.get("args")
            out[(_track(e.get("pid")), _track(e.get("tid")))] = args.get("name") if isinstance(args, dict) else None
    return out


def _span(event: dict[str, Any]) -> tuple[float, float, str] | None:
    """(start s, duration s, name) of a complete event; None when ts or dur is not a finite number
    in microseconds (the Trace Event Format's units)."""
    try:
        start, duration = number(event.get("ts"), "ts"), number(event.get("dur"), "dur")
    except MalformedError:
        return None
    return start * 1e-6, duration * 1e-6, str(event.get("name", ""))


def trace(i: int, result: Result) -> str:
    """A Chrome/Perfetto trace (``traceEvents``): complete events as a timeline, one lane per thread.
    Events the chart cannot place (no numeric ``ts``/``dur``) are counted and left out, as a trace
    viewer skips them; a ``traceEvents`` that is not a list is malformed."""
    events = result["traceEvents"]
    if not isinstance(events, list):
        raise MalformedError("traceEvents", "is not a list")
    names = _meta_names(events, "thread_name")
    process = {pid: name for (pid, _), name in _meta_names(events, "process_name").items()}
    lanes: dict[tuple[Any, Any], list[tuple[float, float, str]]] = {}
    skipped = 0
    for event in events:
        if isinstance(event, dict) and event.get("ph") == "X":
            span = _span(event)
            if span is None:
                skipped += 1
                continue
            lanes.setdefault((_track(event.get("pid")), _track(event.get("tid"))), []).append(span)
    rows = [(f"{process.get(k[0], k[0])}/{names.get(k, k[1])}", spans) for k, spans in sorted(lanes.items(), key=str)]
    count = sum(len(s) for _, s in rows)
    text = f"{count} events on {len(rows)} tracks"
    if skipped:
        text += f"; not drawn: {skipped} complete event{'s' if skipped > 1 else ''} without a numeric ts and dur"
    return "\n".join([paragraph(text), timeline_chart("timeline", rows)])


def replay(i: int, result: Result) -> str:
    """A replayed Chakra trace: step time and busy vs exposed communication per category."""
    parts = [_rows(i, result, [("step time", "step_time_s", "s"), ("ranks", "ranks", ""), ("ops", "ops", "")])]
    busy = numbers(result.get("comm_busy_s"), "comm_busy_s")
    exposed = numbers(result.get("exposed_comm_s"), "exposed_comm_s")
    items = [(f"{k} busy", busy[k]) for k in sorted(busy)] + [
        (f"{k} exposed", exposed.get(k, 0.0)) for k in sorted(busy)
    ]
    parts.append(
        bar_chart("communication: busy vs exposed (s)", items, "s") if items else paragraph("no communication")
    )
    return "\n".join(parts)


def generic(i: int, result: Result) -> str:
    rows = [
        (key, f"{i}.{key}", value, "")
        for key, value in sorted(result.items())
        if isinstance(value, (int, float, str)) and not isinstance(value, bool)
    ]
    return numbers_table(rows)


BUILDERS: dict[str, Callable[[int, Result], str]] = {
    "train": train,
    "infer": infer,
    "serve": serve,
    "plan": plan,
    "traffic": traffic,
    "validate": validate,
    "collective": collective,
    "calibration": calibration,
    "timeline": trace,
    "replay": replay,
    "cluster": cluster,
    "result": generic,
}


def kind_of(result: Result) -> str:
    """The report kind of a result JSON, from its contract keys."""
    if "traceEvents" in result:
        return "timeline"
    if result.get("workload") == "chakra":
        return "replay"
    if "suites" in result:
        return "validate"
    if "jobs" in result and "links" in result:
        return "cluster"
    if "plans" in result:
        return "plan"
    if "residuals" in result and "runs" in result:
        return "calibration"
    if isinstance(result.get("ttft_s"), dict):
        return "serve"
    if "ttft_s" in result:
        return "infer"
    if "throughput_fraction" in result:
        return "traffic"
    if "step_time_s" in result:
        return "train"
    if "busbw_GBps" in result:
        return "collective"
    return "result"
