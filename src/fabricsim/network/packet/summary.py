"""Reduce a :class:`PacketRun` to the JSON figures of ``traffic --fidelity packet`` (layer L3).

Keys (DESIGN.md contract): ``fct_s`` {p50, p95, p99, max} overall and ``fct_s_by_size`` per size
bucket, ``slowdown`` {p50, p99} (FCT / ideal FCT on an empty network: size / line rate + path
latency + store-and-forward of the last packet), ``pause_s`` (total time upstream ends were
paused, summed over links), ``pause_frames`` (XOFF frames) and ``pause_frames_to_hosts`` (those
received by sender NICs), ``credit_stall_s``, ``ecn_marked_fraction`` (marked / delivered
packets), ``queue_bytes`` {class: {p99, max}} (queue seen by packets joining a switch egress;
p99 to its histogram bin's upper edge, at most the max; the bins cover the buffer), ``drops``,
``retransmitted_bytes`` (payload sent again by the loss recovery), ``trimmed_packets``,
``fec_latency_s`` (per hop), ``delivered_bytes``/``offered_bytes`` (conservation). With several
traffic classes (``--cc-param classes=N``), also ``by_class`` {class: {flows, fct_s, drops}} (the
finite flows' FCTs; ``pause_s`` then sums the pause time of every class).
"""

from __future__ import annotations

import itertools

import numpy as np

from fabricsim.network.packet.model import PacketRun

SIZE_BUCKETS_BYTES = (10e3, 100e3, 1e6, 10e6)  # upper edges; the last bucket is open
LINK_CLASSES = ("host_to_switch", "switch_to_host", "switch_to_switch")


def _stats(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99), "max": float(values.max())}


def _bucket_label(lo: float, hi: float) -> str:
    def fmt(x: float) -> str:
        return f"{x / 1e6:g}MB" if x >= 1e6 else f"{x / 1e3:g}KB"

    return f"<={fmt(hi)}" if lo == 0 else (f">{fmt(lo)}" if hi == np.inf else f"{fmt(lo)}-{fmt(hi)}")


def fct_by_size(run: PacketRun) -> dict[str, dict[str, float]]:
    """FCT statistics per size bucket (buckets with flows only)."""
    fct = run.finish_s - run.flows.start_s
    edges = (0.0, *SIZE_BUCKETS_BYTES, np.inf)
    out: dict[str, dict[str, float]] = {}
    for lo, hi in itertools.pairwise(edges):
        pick = (run.flows.size_bytes > lo) & (run.flows.size_bytes <= hi)
        if pick.any():
            out[_bucket_label(lo, hi)] = {**_stats(fct[pick]), "flows": int(pick.sum())}
    return out


def queue_percentile(hist: np.ndarray, bin_bytes: float, q: float, top_bytes: float) -> float:
    """The ``q`` quantile (0-1) of a queue-length histogram of ``bin_bytes`` bins: its bin's upper
    edge, never above ``top_bytes`` (the largest queue seen), so it stays exact where the histogram's
    last bin holds everything above its range."""
    total = float(hist.sum())
    if total == 0:
        return 0.0
    k = int(np.searchsorted(np.cumsum(hist), q * total))
    return float(min((k + 1) * bin_bytes, top_bytes))


def queue_bytes(run: PacketRun) -> dict[str, dict[str, float]]:
    """Per link class that carried switch egress traffic: p99 and max queue (bytes)."""
    out: dict[str, dict[str, float]] = {}
    for c, name in enumerate(LINK_CLASSES):
        links = run.link_class == c
        if not links.any() or run.queue_hist[c].sum() == 0:
            continue
        top = float(run.queue_max_bytes[links].max())
        out[name] = {"p99": queue_percentile(run.queue_hist[c], run.queue_bin_bytes, 0.99, top), "max": top}
    return out


def by_class(run: PacketRun) -> dict[str, dict[str, object]]:
    """Per traffic class: its flows, their FCT statistics (finite flows) and its drops."""
    fct = run.finish_s - run.flows.start_s
    out: dict[str, dict[str, object]] = {}
    for c, drops in enumerate(run.class_drops):
        pick = run.flow_class == c
        finite = pick & np.isfinite(fct)
        out[str(c)] = {"flows": int(pick.sum()), "fct_s": _stats(fct[finite]), "drops": int(drops)}
    return out


def summarize(run: PacketRun) -> dict[str, object]:
    """The packet-fidelity JSON keys (see the module docstring)."""
    fct = run.finish_s - run.flows.start_s
    slowdown = fct / np.maximum(run.ideal_fct_s, 1e-30)
    p50, p99 = np.percentile(slowdown, [50, 99])
    to_hosts = run.link_class == 0
    classes = {"by_class": by_class(run)} if len(run.class_drops) > 1 else {}
    return {
        "fct_s": _stats(fct),
        "fct_s_by_size": fct_by_size(run),
        "slowdown": {"p50": float(p50), "p99": float(p99)},
        "pause_s": float(run.pause_s.sum()),
        "pause_frames": int(run.pause_frames.sum()),
        "pause_frames_to_hosts": int(run.pause_frames[to_hosts].sum()),
        "credit_stall_s": float(run.credit_stall_s.sum()),
        "ecn_marked_fraction": run.ecn_marked / max(run.delivered_packets, 1),
        "queue_bytes": queue_bytes(run),
        "drops": run.drops,
        "retransmitted_bytes": run.retransmitted_bytes,
        "trimmed_packets": run.trimmed_packets,
        "fec_latency_s": run.fec_latency_s,
        "offered_bytes": float(run.flows.size_bytes.sum()),
        "delivered_bytes": float(run.delivered_bytes.sum()),
        "packet_events": run.events,
        **classes,
    }
