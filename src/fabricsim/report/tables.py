"""Readable tables for the CLI (layer L10). Each function takes a result's JSON dict."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table

from fabricsim.units import format_bytes, format_rate, format_seconds, format_size


def fits_text(fits: bool) -> str:
    """Whether a layout fits in memory, worded the same in every table (the JSON keeps a boolean)."""
    return "yes" if fits else "NO"


def key_value_table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    for key, value in rows:
        table.add_row(key, value)
    return table


def collective_table(result: dict[str, Any]) -> Table:
    return key_value_table(
        f"{result['op']} on {result['gpus']} GPUs",
        [
            ("size", format_size(result["size_bytes"])),
            ("algorithm", f"{result['algorithm']} / {result['protocol']}"),
            ("time", format_seconds(result["time_s"])),
            ("algbw", f"{result['algbw_GBps']:.2f} GB/s"),
            ("busbw", f"{result['busbw_GBps']:.2f} GB/s"),
            ("fidelity", str(result.get("fidelity", "analytic"))),
        ],
    )


def catalog_list_table(listing: dict[str, list[str]]) -> Table:
    table = Table(title="fabricsim catalog", title_justify="left")
    table.add_column("kind", style="bold")
    table.add_column("names")
    for kind, names in listing.items():
        table.add_row(kind, ", ".join(names))
    return table


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            if key == "sources":
                continue
            _flatten(f"{prefix}.{key}" if prefix else str(key), child, out)
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        out.append((prefix, ", ".join(value) or "-"))  # e.g. kernel_figures.defaults
    else:
        out.append((prefix, f"{value:.6g}" if isinstance(value, float) else str(value)))


# unit of a catalog field, from the unit its name carries (SI inside; names end in the unit);
# longest suffixes first: ``flops_per_s`` is a rate, not seconds
_FIELD_UNITS = (("_flops_per_s", "FLOP/s"), ("_Bps", "B/s"), ("_per_s", "/s"), ("_bytes", "B"), ("_hz", "Hz"),
                ("_s", "s"), ("_w", "W"), ("_W", "W"), ("_J", "J"), ("_usd", "USD"), ("_gbps", "Gb/s"),
                ("_hours", "h"))


def field_unit(key: str) -> str:
    """The unit a catalog field's name declares (``hbm_bandwidth_Bps`` -> ``B/s``,
    ``kernels.gemm.bf16.flops_per_s`` -> ``FLOP/s``); peak FLOP rates are FLOP/s; '' for counts
    and names."""
    if key.startswith("peak_flops."):
        return "FLOP/s"
    leaf = "_" + key.rsplit(".", 1)[-1]  # a leaf named just ``flops_per_s`` matches ``_flops_per_s``
    return next((unit for suffix, unit in _FIELD_UNITS if leaf.endswith(suffix)), "")


def field_source(sources: dict[str, str], key: str) -> tuple[str, str]:
    """The source the YAML gives for ``key`` and the path it is given at: its own, else that of
    the nearest enclosing ``{value, source}`` (a kernel figure's ``m``, ``n``, ``flops_per_s``
    share one), else the file's (path ``*``); ``("", "")`` when there is none."""
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        path = ".".join(parts[:end])
        if path in sources:
            return sources[path], path
    return (sources["*"], "*") if "*" in sources else ("", "")


def catalog_item_table(item: dict[str, Any]) -> Table:
    rows: list[tuple[str, str]] = []
    _flatten("", item, rows)
    sources = item.get("sources", {})
    table = Table(title=str(item.get("name", "")), title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", justify="right")
    table.add_column("unit")
    table.add_column("source", overflow="fold")
    shown = ""  # the path whose source the row above printed: the next rows sharing it say so briefly
    for key, value in rows:
        source, path = field_source(sources, key)
        repeat = path not in ("", "*", key) and path == shown
        table.add_row(key, value, field_unit(key), "as above" if repeat else source)
        shown = path
    return table


def _suite_caption(suite: dict[str, Any], sources: list[str]) -> str | None:
    """Calibration note, held-out-calibration errors (one line per group), the rows the suite
    could not predict (counted, with their reasons) and the numbered sources of its rows."""
    lines = [suite["calibration"]] if suite.get("calibration") else []
    for h in suite.get("holdout", []):
        lines.append(f"{h['kind']} {h['group']}: mean |error| {h['mean_abs_error'] * 100:.1f}% ({h['rows']} rows)")
    reasons: dict[str, int] = {}
    for row in suite.get("skipped", ()):
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
    lines += [f"skipped {count} rows: {reason}" for reason, count in reasons.items()]
    lines += [f"[{k}] {source}" for k, source in enumerate(sources, 1)]
    return "\n".join(lines) or None


def validation_tables(payload: dict[str, Any]) -> Any:

    tables = []
    for suite in payload["suites"]:
        sources = list(dict.fromkeys(e["source"] for e in suite["entries"] if e.get("source")))
        table = Table(
            title=f"{suite['name']}: mean |error| {suite['mean_abs_error'] * 100:.1f}%, "
            f"max {suite['max_abs_error'] * 100:.1f}%, bias {suite['bias'] * 100:+.1f}%",
            title_justify="left",
            caption=_suite_caption(suite, sources),
            caption_justify="left",
        )
        for column in ("entry", "metric", "measured", "predicted", "error"):
            numeric = column in ("measured", "predicted", "error")
            table.add_column(column, justify="right" if numeric else "left", overflow="ellipsis" if numeric else "fold")
        for e in suite["entries"]:
            cited = f" [{sources.index(e['source']) + 1}]" if e.get("source") else ""
            table.add_row(
                e["id"] + cited, f"{e['metric']} [{e['unit']}]", f"{e['measured']:.4g}", f"{e['predicted']:.4g}",
                f"{e['error'] * 100:+.1f}%",
            )
        tables.append(table)
    return Group(*tables)


def sweep_table(summary: dict[str, Any]) -> Table:
    """Summary of one ``fabricsim sweep`` run (done/failed = computed now; skipped = already stored)."""
    return key_value_table(
        f"sweep: {summary['tasks_total']} tasks",
        [
            ("done", str(summary["tasks_done"])),
            ("skipped (already stored)", str(summary["tasks_skipped"])),
            ("failed", str(summary["tasks_failed"])),
            ("elapsed", format_seconds(summary["elapsed_s"])),
            ("executor", f"{summary['executor']} ({summary['workers']} workers)"),
            ("store", str(summary["db"])),
            ("export", str(summary["export"] or "-")),
        ],
    )


def _setting_applies(key: str, value: Any, layout: dict[str, Any]) -> bool:
    """Whether the framework setting ``key`` can change the estimate of a run with ``layout``:
    the overlaps need the group they hide (dp x cp, ZeRO, tp, ep), the MoE settings expert
    parallelism (or a value given), the FP8 recipe an FP8/FP4 dtype, the pipeline-split flags
    pipeline stages, the recompute modules selective recomputation."""
    degree = {name: int(layout.get(name, 1)) for name in ("tp", "pp", "dp", "cp", "ep")}
    data = degree["dp"] * degree["cp"] > 1
    rules = {
        "overlap_grad_reduce": data,
        "overlap_param_gather": data and int(layout.get("zero", 0)) >= 1,
        "tp_comm_overlap": degree["tp"] > 1,
        "a2a_overlap": degree["ep"] > 1,
        "moe_dispatcher": degree["ep"] > 1,
        "capacity_factor": degree["ep"] > 1 or value is not None,
        "fp8_recipe": layout.get("dtype") in ("fp8", "fp4"),
        "mtp_layers": bool(value),
        "account_for_embedding_in_pipeline_split": degree["pp"] > 1 or bool(value),
        "account_for_loss_in_pipeline_split": degree["pp"] > 1 or bool(value),
        "pipeline_layout": value is not None,
        "recompute_modules": layout.get("recompute") == "selective",
    }
    return rules.get(key, True)


def _setting_value(key: str, value: Any) -> str:
    """A setting's value as a user reads it: on/off, ``dropless``, the default module list."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if key == "capacity_factor":
        return "dropless" if value is None else f"{value:g}"
    if key == "recompute_modules":
        return ",".join(value) if value else "core_attn"
    return str(value)


def settings_text(options: dict[str, Any], layouts: list[dict[str, Any]]) -> str:
    """The framework settings that apply to at least one of ``layouts``, in the CLI's spelling
    (``flash-attention on, cross-entropy unfused``); the JSON ``options`` keep every setting."""
    return ", ".join(
        f"{key.replace('_', '-')} {_setting_value(key, value)}"
        for key, value in options.items()
        if any(_setting_applies(key, value, layout) for layout in layouts)
    )


def layout_text(layout: dict[str, Any]) -> str:
    """``tp=8 pp=1 ... sequence_parallel=on``: a layout's fields with readable values."""
    def value_text(value: Any) -> str:
        if isinstance(value, bool):
            return "on" if value else "off"
        return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)

    return " ".join(f"{key}={value_text(value)}" for key, value in layout.items())


def train_table(result: dict[str, Any]) -> Any:
    """Layout, step time, MFU/HFU, and the time and memory breakdowns of a ``train`` result."""

    fits = fits_text(result["fits"])
    hw_tflops = result["hardware_tflops_per_gpu"]
    capacity = format_bytes(result["memory_capacity_bytes"])
    summary = key_value_table(
        f"{result.get('model', '')} on {result['gpus']} GPUs of {result.get('system', '')}",
        [
            ("layout", layout_text(result["layout"])),
            ("settings", settings_text(result.get("options", {}), [result["layout"]])),
            ("step time", format_seconds(result["step_time_s"])),
            ("tokens/s", format_rate(result["tokens_per_s"])),
            ("MFU / HFU", f"{result['mfu'] * 100:.1f}% / {result['hfu'] * 100:.1f}%"),
            ("TFLOP/s per GPU", f"{result['model_tflops_per_gpu']:.1f} model, {hw_tflops:.1f} hardware"),
            ("memory per GPU", f"{format_bytes(result['memory_per_gpu_bytes'])} of {capacity} (fits: {fits})"),
            ("fidelity", str(result.get("fidelity", "analytic"))),
        ],
    )
    step = result["step_time_s"]
    times = Table(title="time per step", title_justify="left")
    for column in ("part", "time", "share"):
        times.add_column(column, justify="left" if column == "part" else "right")
    for key, value in result["time_breakdown_s"].items():
        times.add_row(key.removesuffix("_s"), format_seconds(value), f"{value / step * 100:.1f}%")
    memory = Table(title="memory per GPU", title_justify="left")
    for column in ("part", "bytes"):
        memory.add_column(column, justify="left" if column == "part" else "right")
    for key, value in result["memory_breakdown_bytes"].items():
        memory.add_row(key, format_bytes(value))
    for tier, parts in result.get("memory_breakdown_bytes_by_tier", {}).items():
        if tier != "hbm":  # offload: the tier below HBM, its bytes of its capacity per GPU
            capacity = format_bytes(result["memory_capacity_bytes_by_tier"][tier])
            memory.add_row(f"{tier} (of {capacity})", format_bytes(sum(parts.values())))
    return Group(summary, times, memory)


def simulated_train_table(result: dict[str, Any]) -> Any:
    """``train_table`` plus the simulation's extras: analytic step, tails, exposed comm, folding."""

    rows = [("analytic step time", format_seconds(result["analytic_step_time_s"]))]
    if "step_time_s_p50" in result:
        p50, p99 = format_seconds(result["step_time_s_p50"]), format_seconds(result["step_time_s_p99"])
        rows.append(("step time P50 / P99", f"{p50} / {p99} ({result['seeds']} seeds)"))
    for category, seconds in result["exposed_comm_s"].items():
        busy = result["comm_busy_s"].get(category, 0.0)
        rows.append((f"exposed {category}", f"{format_seconds(seconds)} of {format_seconds(busy)} per GPU"))
    rows.append(("simulated ops", f"{result['simulated_ops']:,}"))
    rows.append(("folded", ", ".join(f"{k}={v}" for k, v in result["folded"].items())))
    return Group(train_table(result), key_value_table("simulation", rows), *_fabric_table(result))


RECOMPUTE_CODES = {"selective": "rc:sel", "fine-grained": "rc:fg", "full": "rc:full"}
"""What :func:`compact_layout` prints for each ``--recompute`` mode (none prints nothing)."""

PLAN_LEGEND = (
    "tp/pp/dp/cp/ep: tensor/pipeline/data/context/expert-parallel degree; vpp: virtual stages per GPU; "
    "mb: micro-batch (sequences); z: ZeRO stage; rc:sel / rc:fg / rc:full: selective / fine-grained / full "
    "recomputation; sp: sequence parallel; fp8, fp4...: dtype (bf16 unless shown); adp: attention data-parallel "
    "(ep > tp); x: replicas; kv: KV-cache dtype; off:opt+w+act@tier: optimizer / weights / activations "
    "offloaded to that memory tier"
)
"""The abbreviations :func:`compact_layout` prints, explained under every plan table."""


def compact_layout(layout: dict[str, Any]) -> str:
    """``tp8 pp16 dp24 vpp8 mb1 z1 sp``: degrees always, the other fields when not the default."""
    parts = [f"tp{layout['tp']}", f"pp{layout['pp']}"]
    parts += [f"dp{layout['dp']}"] if "dp" in layout else []
    parts += [f"{key}{layout[key]}" for key in ("cp", "ep", "vpp") if layout.get(key, 1) != 1]
    if layout.get("attention_dp", 1) != 1:
        parts.append(f"adp{layout['attention_dp']}")
    if "replicas" in layout:
        parts.append(f"x{layout['replicas']}")
    if "micro_batch" in layout:
        parts.append(f"mb{layout['micro_batch']}")
    if "zero" in layout:
        parts.append(f"z{layout['zero']}")
    if layout.get("recompute", "none") != "none":
        parts.append(RECOMPUTE_CODES.get(str(layout["recompute"]), f"rc:{layout['recompute']}"))
    if layout.get("sequence_parallel"):
        parts.append("sp")
    if layout.get("dtype", "bf16") != "bf16":
        parts.append(str(layout["dtype"]))
    if layout.get("kv_dtype", layout.get("dtype", "bf16")) != layout.get("dtype", "bf16"):
        parts.append(f"kv:{layout['kv_dtype']}")
    if layout.get("offload"):  # e.g. off:opt+w+act@host
        short = {"optimizer": "opt", "weights": "w", "activations": "act"}
        classes = "+".join(short.get(c, c) for c in layout["offload"])
        parts.append(f"off:{classes}@{layout.get('offload_tier', 'host')}")
    return " ".join(parts)


def _costing_note(result: dict[str, Any]) -> str:
    """``plan infer``: a costed layout is priced at several batch sizes (its bisection), and the SLOs
    reject layouts after costing."""
    if "estimates" not in result:
        return ""
    return f", {result['estimates']:,} estimates (batch sizes tried), {result['rejected_slo']:,} missing the SLOs"


def _feasible_row(result: dict[str, Any]) -> tuple[str, str]:
    """``plan train`` with offload search sizes the offload choices of a time-pruned layout only
    while they matter to the search: ``feasible`` counts those found to fit among the sized."""
    if "rejected_slo" in result:
        return ("feasible (fit, SLOs)", f"{result['feasible']:,}")
    unsized = result.get("offload_unsized")
    if not unsized:
        return ("feasible (fit)", f"{result['feasible']:,}")
    note = f"+ {unsized:,} time-pruned that do not fit alone, offload not sized: fit unknown"
    return ("feasible (fit, of sized)", f"{result['feasible']:,} ({note})")


def _plan_summary(result: dict[str, Any]) -> Table:
    pruned = ", ".join(f"{count:,} {reason.replace('_', ' ')}" for reason, count in result["pruned"].items())
    elapsed = result["elapsed_s"]
    rate = result["evaluated"] / elapsed if elapsed > 0 else float("inf")
    rows = [
        ("objective", str(result["objective"])),
        ("evaluated", f"{result['evaluated']:,} layouts ({rate:,.0f}/s)"),
        _feasible_row(result),
        ("costed", f"{result['costed']:,} layouts{_costing_note(result)} (pruned before costing: {pruned})"),
        ("elapsed", format_seconds(elapsed)),
    ]
    if result.get("refined"):
        rows.append(("refined", f"best {result['refined']} re-timed by the event-driven engine"))
    if result["plans"] and result["plans"][0].get("options"):  # training: the settings every plan ran with
        layouts = [plan["layout"] for plan in result["plans"]]
        rows.append(("settings", settings_text(result["plans"][0]["options"], layouts)))
    unfit = result.get("faster_but_unfit")
    if unfit:
        need = f"needs {format_bytes(unfit['memory_per_gpu_bytes'])} of {format_bytes(unfit['memory_capacity_bytes'])}"
        step = format_seconds(unfit["step_time_s"])
        rows.append(("faster, no fit", f"{compact_layout(unfit['layout'])}: {step}/step, {need}"))
    if not result["plans"] and result.get("smallest_memory_per_gpu_bytes") is not None:
        least = format_bytes(result["smallest_memory_per_gpu_bytes"])
        rows.append(("nothing fits", f"least memory {least} ({compact_layout(result['smallest_memory_layout'])})"))
    title = f"plan {result['kind']}: {result['model']} on {result['gpus']} GPUs of {result['system']}"
    return key_value_table(title, rows)


def _train_plan_rows(table: Table, plans: list[dict[str, Any]]) -> None:
    refined = any(plan.get("fidelity", "analytic") != "analytic" for plan in plans)
    for column in ("#", "layout", "step", "tokens/s", "MFU", "mem/GPU", *(["fidelity"] if refined else [])):
        left = column in ("layout", "fidelity")
        table.add_column(column, justify="left" if left else "right", no_wrap=column != "layout")
    for plan in plans:
        cells = [
            str(plan["rank"]), compact_layout(plan["layout"]), format_seconds(plan["step_time_s"]),
            format_rate(plan["tokens_per_s"]), f"{plan['mfu'] * 100:.1f}%", format_bytes(plan["memory_per_gpu_bytes"]),
        ]
        table.add_row(*cells, *([str(plan.get("fidelity", "analytic"))] if refined else []))


def _why_table(plans: list[dict[str, Any]]) -> Table:
    rows = [(f"#{p['rank']}", ", ".join(p["why"])) for p in plans[1:]]
    if "batch_limit" in plans[0]:
        rows.insert(0, ("#1", f"batch {plans[0]['batch']} limited by {plans[0]['batch_limit']}"))
    return key_value_table("why the others lose to #1", rows)


def _breakdown_table(plans: list[dict[str, Any]], key: str, title: str) -> Table:
    """Rows: parts of the breakdown ``key``; columns: the best plans."""
    table = Table(title=title, title_justify="left")
    table.add_column("part")
    for plan in plans:
        table.add_column(f"#{plan['rank']}", justify="right")
    for part in plans[0][key]:
        if not any(plan[key].get(part, 0.0) for plan in plans):
            continue
        table.add_row(part.removesuffix("_s"), *(format_seconds(plan[key].get(part, 0.0)) for plan in plans))
    return table


def plan_table(result: dict[str, Any]) -> Any:
    """Search summary, the ranked plans with why each loses to #1, and the best plans' breakdowns."""

    parts: list[Any] = [_plan_summary(result)]
    plans = result["plans"]
    if not plans:
        return Group(*parts)
    ranked = Table(title="ranked plans", title_justify="left", caption=PLAN_LEGEND, caption_justify="left")
    if result["kind"] == "train":
        _train_plan_rows(ranked, plans)
        parts += [ranked, _breakdown_table(plans[:3], "time_breakdown_s", "time per step of the best plans")]
    else:
        _infer_plan_rows(ranked, plans)
        parts.append(ranked)
    if len(plans) > 1 or "batch_limit" in plans[0]:
        parts.insert(2, _why_table(plans))
    if result.get("serving"):
        parts.append(_serving_table(result["serving"]))
    if "slice" in plans[0]:
        parts.append(_slice_table(plans, "per step" if result["kind"] == "train" else "per batch of requests"))
    return Group(*parts)


def _slice_table(plans: list[dict[str, Any]], per: str) -> Table:
    """Each plan's OCS slice (plan --topology ocs-torus:auto): shape, twist, the collectives' time
    ``per`` step (train) or batch of requests (infer) on it, on the runner-up and on the default shape."""
    table = Table(title=f"OCS slice per plan (shape x fastest: TP on x; collectives {per})", title_justify="left")
    for column in ("#", "slice", "collectives", "runner-up", "default"):
        table.add_column(column, justify="right" if column == "#" else "left")

    def shape(pick: dict[str, Any] | None) -> str:
        if pick is None:
            return "-"
        return f"{pick['dims']}{' twisted' if pick['twisted'] else ''} {format_seconds(pick['collective_s'])}"

    for plan in plans:
        pick = plan["slice"]
        chosen = f"{pick['dims']}{' twisted' if pick['twisted'] else ''}"
        runner_up, default = shape(pick["runner_up"]), shape(pick["default"])
        table.add_row(str(plan["rank"]), chosen, format_seconds(pick["collective_s"]), runner_up, default)
    return table


def _serving_table(serving: dict[str, Any]) -> Table:
    """Deployments of the plans' layouts (aggregated or prefill:decode) under a request stream."""
    slo = serving["slo"]
    table = Table(
        title=f"serving {serving['requests']} requests at {serving['arrival_rate_per_s']:g}/s "
        f"(SLO TTFT {format_seconds(slo['ttft_s'])}, TPOT {format_seconds(slo['tpot_s'])}; "
        f"{serving['simulated']} deployments simulated)",
        title_justify="left",
    )
    for column in ("#", "layout", "P:D", "SLO met", "out tok/s", "TTFT p99", "TPOT p99"):
        table.add_column(column, justify="left" if column == "layout" else "right", no_wrap=column != "layout")
    for d in serving["deployments"]:
        table.add_row(
            str(d["rank"]), compact_layout(d["layout"]), d["layout"]["disaggregate"] or "-",
            f"{d['slo_attainment'] * 100:.1f}%", format_rate(d["output_tokens_per_s"]),
            format_seconds(d["ttft_s"]["p99"]), format_seconds(d["tpot_s"]["p99"]),
        )
    return table


def _infer_plan_rows(table: Table, plans: list[dict[str, Any]]) -> None:
    for column in ("#", "layout", "batch", "TTFT", "TPOT", "out tok/s", "mem/GPU"):
        table.add_column(column, justify="left" if column == "layout" else "right", no_wrap=column != "layout")
    for plan in plans:
        table.add_row(
            str(plan["rank"]), compact_layout(plan["layout"]), str(plan["batch"]), format_seconds(plan["ttft_s"]),
            format_seconds(plan["tpot_s"]), format_rate(plan["output_tokens_per_s"]),
            format_bytes(plan["memory_per_gpu_bytes"]),
        )


def infer_table(result: dict[str, Any]) -> Table:
    layout = result["layout"]
    return key_value_table(
        f"infer {result['model']} on {result['gpus']} GPUs of {result['system']}",
        [
            ("layout", f"tp {layout['tp']} pp {layout['pp']} ep {layout['ep']} x{layout['replicas']} replicas, "
             f"{layout['dtype']} weights, {layout['kv_dtype']} KV"),
            ("batch (per replica)", str(result["batch"])),
            ("TTFT", format_seconds(result["ttft_s"])),
            ("TPOT", format_seconds(result["tpot_s"])),
            ("end-to-end", format_seconds(result["e2e_latency_s"])),
            ("output tokens/s", format_rate(result["output_tokens_per_s"])),
            ("KV cache per GPU", format_bytes(result["kv_cache_bytes"])),
            ("memory per GPU", f"{format_bytes(result['memory_per_gpu_bytes'])} of "
             f"{format_bytes(result['memory_capacity_bytes'])}"),
            ("fits", fits_text(result["fits"])),
        ],
    )


def serve_table(result: dict[str, Any]) -> Table:
    def triple(values: dict[str, float]) -> str:
        return " / ".join(format_seconds(values[k]) if values[k] == values[k] else "-" for k in ("p50", "p90", "p99"))

    rate = result.get("arrival_rate_per_s")
    return key_value_table(
        f"serve {result['model']} on {result['gpus']} GPUs of {result['system']}",
        [
            ("fits", serve_fit_line(result)),
            ("requests", f"{result['completed']} of {result['requests']}"
             + (f" at {rate:g}/s" if rate else " (trace)")),
            ("output tokens/s", format_rate(result["output_tokens_per_s"])),
            ("TTFT p50/p90/p99", triple(result["ttft_s"])),
            ("TPOT p50/p90/p99", triple(result["tpot_s"])),
            ("E2E p50/p90/p99", triple(result["e2e_s"])),
            ("SLO attainment", f"{result['slo_attainment'] * 100:.1f}%{_slo_text(result.get('slo') or {})}"),
            ("preemptions", str(result["preemptions"])),
            *_serve_network_rows(result),
            *_kv_pool_rows(result.get("kv_pool")),
            *_serve_feature_rows(result),
        ],
    )


def _serve_network_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """KV hand-offs (disaggregated), the per-step network stall and the fabric, when there are any."""
    rows = []
    kv = result.get("kv_transfer_s")
    if kv:
        rows.append(("KV hand-off p50/p90/p99", " / ".join(format_seconds(kv[k]) for k in ("p50", "p90", "p99"))))
    stall = result.get("network_stall_s") or {}
    if any(stall.values()):
        pair = f"{format_seconds(stall['p50'])} / {format_seconds(stall['p99'])}"
        rows.append(("network stall per step p50/p99", pair))
    network = result.get("network")
    if network:
        background = f", background {network['background']}" if network.get("background") else ""
        rows.append(("fabric", f"{network['fidelity']} on {network['topology']} ({network['transport']}, "
                               f"{network['routing']}, {network['placement']} placement{background})"))
        if network.get("retransmitted_bytes") or network.get("trimmed_packets"):
            rows.append(("loss recovery", f"{format_bytes(network['retransmitted_bytes'])} resent, "
                                          f"{network['trimmed_packets']:,} trimmed"))  # fmt: skip
    return rows


def _kv_pool_rows(pool: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The ``KV pool`` row of a serve result run with ``--kv-pool`` (none without)."""
    if not pool:
        return []
    hit = pool["hit_rate"]
    hits = f"{hit * 100:.1f}%" if hit == hit and hit is not None else "-"
    return [("KV pool", f"{pool['name']} shared by {pool['sharing_gpus']} GPUs: hit rate {hits} of "
             f"{pool['readmissions']} re-admissions, {pool['bytes_moved'] / 1e9:.2f} GB moved, "
             f"stalled {format_seconds(pool['stall_s'])}")]


def _serve_feature_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """Prefix-cache and speculative-decoding rows, only when those features ran."""
    rows = []
    if result.get("prefix_hit_rate"):
        rows.append(("prefix cache", f"{result['prefix_hit_rate'] * 100:.1f}% hits, "
                                     f"{result['prefill_tokens_computed']:,} prompt tokens computed"))
    per_step = result.get("tokens_per_step")
    if per_step is not None and per_step == per_step and per_step != 1.0:
        rows.append(("tokens per decode step", f"{per_step:.3f}"))
    return rows


def _slo_text(slo: dict[str, float]) -> str:
    """Which SLO the attainment counts: `` of TTFT <= 2.000 s and TPOT <= 100.000 ms``."""
    if not slo:
        return ""
    return f" (TTFT <= {format_seconds(slo['ttft_s'])} and TPOT <= {format_seconds(slo['tpot_s'])})"


def serve_fit_line(result: dict[str, Any]) -> str:
    """``does not fit: needs X GiB per GPU, has Y GiB`` (or ``yes: ...``) with the KV tokens of a
    replica against the longest request; per pool when disaggregated."""
    gib = 2.0**30
    pools = result.get("pools") or {"": result}
    parts = []
    for role, pool in pools.items():
        need, have = pool["memory_per_gpu_bytes"] / gib, pool["memory_capacity_bytes"] / gib
        verdict = fits_text(pool["fits"])
        parts.append(f"{role + ' pool ' if role else ''}{verdict}: needs {need:.1f} GiB per GPU, has {have:.1f} GiB; "
                     f"a replica's KV cache holds {pool['kv_capacity_tokens']:,} tokens, the longest request "
                     f"needs {pool['longest_request_tokens']:,}")
    return "\n".join(parts)


def simulated_infer_table(result: dict[str, Any]) -> Any:
    """``infer_table`` plus the simulation's extras: analytic TTFT/TPOT, TTFT and per-token TPOT tails."""

    rows = [("analytic TPOT", format_seconds(result["analytic_tpot_s"]))]
    if "analytic_ttft_s" in result:
        rows.insert(0, ("analytic TTFT", format_seconds(result["analytic_ttft_s"])))
    if "ttft_s_p50" in result:
        ttft = (format_seconds(result["ttft_s_p50"]), format_seconds(result["ttft_s_p99"]))
        rows.append(("TTFT P50 / P99", f"{ttft[0]} / {ttft[1]}"))
    if "tpot_s_p50" in result:
        p50, p99 = format_seconds(result["tpot_s_p50"]), format_seconds(result["tpot_s_p99"])
        rows.append(("TPOT P50 / P99", f"{p50} / {p99} ({result['tokens_sampled']:,} tokens, {result['seeds']} seeds)"))
    rows.append(("simulated ops", f"{result['simulated_ops']:,}"))
    rows.append(("folded", ", ".join(f"{k}={v}" for k, v in result["folded"].items())))
    return Group(infer_table(result), key_value_table("simulation", rows), *_fabric_table(result))


def _fabric_table(result: dict[str, Any]) -> list[Table]:
    """The fabric in the loop (flow/packet fidelity): :func:`fabricsim.report.fabric_rows.network_rows`."""
    if "network" not in result:
        return []
    from fabricsim.report.fabric_rows import network_rows

    return [key_value_table("fabric", network_rows(result["network"]))]


def traffic_table(result: dict[str, Any]) -> Table:
    fraction = result["throughput_fraction"]
    return key_value_table(
        f"{result['pattern']} on {result['topology']} ({result['routing']}, seed {result['seed']})",
        [
            ("hosts / flows", f"{result['hosts']} / {result['flows']}"),
            ("bytes per flow", format_size(result["size_bytes"])),
            (
                "throughput / line rate",
                f"mean {fraction['mean']:.3f}, p1 {fraction['p1']:.3f}, min {fraction['min']:.3f}",
            ),
            ("completion time", format_seconds(result["completion_time_s"])),
            ("max link utilization", f"{result['max_link_utilization']:.3f}"),
            ("fidelity", f"{result['fidelity']} ({result['events']} events)"),
            *_failure_rows(result),
            *_packet_rows(result),
        ],
    )


def _packet_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """FCT, slowdown, PFC, ECN, queues and drops, when ``fabricsim traffic --fidelity packet`` ran."""
    if result.get("fidelity") != "packet":
        return []
    fct, slow, senders = result["fct_s"], result["slowdown"], result["pause_frames_to_hosts"]
    queues = ", ".join(
        f"{k} p99 {format_bytes(v['p99'])} max {format_bytes(v['max'])}" for k, v in result["queue_bytes"].items()
    )
    return [
        ("transport", _transport(result)),
        ("FCT p50 / p99 / max", " / ".join(format_seconds(fct[k]) for k in ("p50", "p99", "max"))),
        ("slowdown p50 / p99", f"{slow['p50']:.2f} / {slow['p99']:.2f}"),
        ("PFC pause", f"{format_seconds(result['pause_s'])} in {result['pause_frames']} frames ({senders} to senders)"),
        ("ECN marked", f"{result['ecn_marked_fraction']:.3f} of packets"),
        ("queues", queues or "none"),
        ("drops", str(result["drops"])),
        *_loss_rows(result),
    ]


def _transport(result: dict[str, Any]) -> str:
    """The transport row of a packet run: its family (results written before it was named: none;
    a collective none of whose legs crossed a NIC: null)."""
    if "transport" in result and result["transport"] is None:
        return "none (no leg crossed a NIC: scale-up links only)"
    named = f"{result['transport']}: " if "transport" in result else ""
    return f"{named}cc {result['cc']}, lossless {result['lossless']}"


def _loss_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """Resent bytes and trimmed packets of a packet run, when there were any."""
    rows = []
    if result.get("retransmitted_bytes"):
        rows.append(("resent", format_bytes(result["retransmitted_bytes"])))
    if result.get("trimmed_packets"):
        rows.append(("trimmed packets", f"{result['trimmed_packets']:,.0f}"))
    return rows


def _failure_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """Failed cables and the healthy run's figures, when ``fabricsim traffic --fail-links`` ran."""
    healthy = result.get("healthy")
    if not healthy:
        return []
    completion = format_seconds(healthy["completion_time_s"])
    return [
        ("failed cables", str(result["failed_links"])),
        ("healthy (no failures)", f"mean {healthy['throughput_fraction_mean']:.3f}, completion {completion}"),
    ]


def network_collective_table(result: dict[str, Any]) -> Table:
    """``fabricsim collective --fidelity flow|packet``: time, bandwidths, and for packet what queues cost."""
    algorithm = f"{result['algorithm']} ({'auto' if result['algorithm_choice'] == 'auto' else 'as given'})"
    rows = [
        ("size", format_size(result["size_bytes"])),
        ("algorithm", algorithm),
        ("network", f"{result['topology']} ({result['routing']}, seed {result['seed']})"),
        ("time", format_seconds(result["time_s"])),
        ("algbw", f"{result['algbw_GBps']:.2f} GB/s"),
        ("busbw", f"{result['busbw_GBps']:.2f} GB/s"),
        ("steps", f"{result['steps']} ({result['simulated_steps']} simulated, {result['events']:,} events)"),
        ("fidelity", result["fidelity"]),
    ]
    if result["fidelity"] == "packet":
        queues = ", ".join(
            f"{k} p99 {format_bytes(v['p99'])} max {format_bytes(v['max'])}" for k, v in result["queue_bytes"].items()
        )
        flow = f"{format_seconds(result['flow_time_s'])} (packet / flow {result['packet_over_flow']:.3f})"
        rows += [
            ("flow-fidelity time", flow),
            ("transport", _transport(result)),
            ("PFC pause", f"{format_seconds(result['pause_s'])} in {result['pause_frames']} frames"),
            ("ECN marked", f"{result['ecn_marked_fraction']:.3f} of packets"),
            ("queues", queues or "none"),
            ("drops", str(result["drops"])),
            *_loss_rows(result),
        ]
    return key_value_table(f"{result['op']} on {result['gpus']} GPUs", rows)
