"""Packet phases (cut and extrapolate), RoCE vs InfiniBand transports, background traffic."""

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.network.base import FlowSet, make_flows
from fabricsim.network.packet.model import PacketNetwork
from fabricsim.network.packet.params import (
    HEADERS,
    CongestionControl,
    Lossless,
    PacketParams,
    RunOptions,
    fec_latency_s,
)
from fabricsim.network.phase import (
    MAX_BACKGROUND_FANOUT,
    BackgroundPattern,
    PacketPhaseNetwork,
    background_flows,
    named_transport,
    parse_background,
    transport_for,
    transport_name,
)
from fabricsim.specs.fabric import LinkKind
from fabricsim.topology.builders import LinkParams, leaf_spine
from fabricsim.topology.routing import Routing, route_table

LINE_BPS = 100e9 / 8


@pytest.fixture(scope="module")
def table():
    """16 hosts, 4 leaves, 2 spines, 2:1 oversubscribed, 100 Gb/s, 1 us per link."""
    return route_table(leaf_spine(4, 2, 4, LinkParams(LINE_BPS, 1e-6), oversubscription=2))


def _join(a: FlowSet, b: FlowSet) -> FlowSet:
    caps = [np.full(f.count, np.inf) if f.max_rate_Bps is None else f.max_rate_Bps for f in (a, b)]
    return make_flows(np.r_[a.src, b.src], np.r_[a.dst, b.dst], np.r_[a.size_bytes, b.size_bytes],
                      np.r_[a.start_s, b.start_s], np.r_[a.label, b.label], np.concatenate(caps))  # fmt: skip


def _cross_leaf(size: float) -> FlowSet:
    """Hosts 0-7 (leaves 0, 1) each send ``size`` to one of hosts 8-15 (leaves 2, 3): every flow
    crosses the 2:1 spines."""
    return make_flows(np.arange(8), np.arange(8, 16), size)


def _run(table, kind: str, flows: FlowSet, **kw):
    net = PacketPhaseNetwork(table, transport_for(kind), **kw)
    return net.run(flows), net.counters()


# --- transports -----------------------------------------------------------------------------


def test_transports_are_what_the_nics_default_to():
    roce, ib = transport_for(LinkKind.ROCE), transport_for("infiniband")
    assert (roce.lossless, roce.cc, roce.routing) == (Lossless.PFC, CongestionControl.DCQCN, Routing.ECMP)
    assert (ib.lossless, ib.cc, ib.routing) == (Lossless.CREDIT, CongestionControl.NONE, Routing.SPRAY)
    assert transport_for("infiniband", adaptive_routing=False).routing is Routing.ECMP
    for t in (roce, ib):
        assert set(dict(t.sources)) == {"lossless", "cc", "routing"}
        assert t.to_json()["name"] == t.name
    with pytest.raises(FabricsimError, match="nic: a nvlink link is not a scale-out NIC"):
        transport_for(LinkKind.NVLINK)


# --- the kernel's per-flow rate cap and stop rule ---------------------------------------------


def test_a_capped_flow_is_paced_at_its_cap(table):
    """A lone 1 MB flow capped at a quarter of the line rate takes 3 x its wire bytes / line longer than
    uncapped (4 hops of 1 us and the store and forward are the same in both). Wire bytes: 1 MB + 245
    packets x 82 B of RoCEv2 headers and gap; the NIC paces its wire bytes at the cap."""
    opts = RunOptions(CongestionControl.NONE, Lossless.PFC, LINE_BPS, 0.0, 0)
    net = PacketNetwork(table, Routing.ECMP, PacketParams(), opts)
    free = net.simulate(make_flows([0], [9], 1e6)).finish_s[0]
    capped = net.simulate(make_flows([0], [9], 1e6, max_rate_Bps=LINE_BPS / 4)).finish_s[0]
    wire = 1e6 + np.ceil(1e6 / 4096) * sum(HEADERS["roce"])
    assert free == pytest.approx(wire / LINE_BPS + 4e-6, rel=0.02)
    assert capped - free == pytest.approx(3 * wire / LINE_BPS, rel=0.02)


@pytest.mark.parametrize("kind", ["roce", "infiniband"])
def test_background_slows_the_phase_and_the_run_ends_with_the_finite_flows(table, kind):
    phase = _cross_leaf(2e6)
    bg = background_flows("permutation", 0.5, np.arange(16), LINE_BPS, seed=1)
    alone, _ = _run(table, kind, phase)
    shared, counters = _run(table, kind, _join(phase, bg))
    assert np.all(np.isfinite(shared.finish_s[:8])) and np.all(np.isinf(shared.finish_s[8:]))
    assert shared.finish_s[:8].max() > 1.2 * alone.finish_s.max()
    assert counters.runs == 1 and counters.min_cut_factor == 1.0


def test_background_alone_is_not_simulated(table):
    bg = background_flows("permutation", 0.5, np.arange(16), LINE_BPS, seed=1)
    result, counters = _run(table, "roce", bg)
    assert np.all(np.isinf(result.finish_s)) and counters.runs == 0


# --- RoCE vs InfiniBand -------------------------------------------------------------------------


def test_roce_and_infiniband_differ_under_a_permutation_with_background(table):
    """Measured: RoCE 983 us, InfiniBand (per-packet adaptive routing as spraying) 866 us (makespan;
    means 657 vs 667 us); without background 587 us (ECMP collisions at the spines) vs 325 us."""
    flows = _join(_cross_leaf(2e6), background_flows("permutation", 0.5, np.arange(16), LINE_BPS, seed=1))
    roce, roce_c = _run(table, "roce", flows)
    ib, ib_c = _run(table, "infiniband", flows)
    assert abs(roce.finish_s[:8].max() / ib.finish_s[:8].max() - 1) > 0.01
    assert abs(roce.finish_s[:8].mean() / ib.finish_s[:8].mean() - 1) > 0.01
    # why: RoCE marks ECN (DCQCN), InfiniBand waits for credits and marks nothing
    assert roce_c.ecn_marked_fraction > 0 and roce_c.credit_stall_s == 0
    assert ib_c.ecn_marked_fraction == 0 and ib_c.credit_stall_s > 0


def test_roce_and_infiniband_agree_on_one_uncontended_flow(table):
    one = make_flows([0], [13], 4e6)
    roce, _ = _run(table, "roce", one)
    ib, _ = _run(table, "infiniband", one)
    assert roce.finish_s[0] == pytest.approx(ib.finish_s[0], rel=0.02)
    packets = np.ceil(4e6 / 4096)  # each at its wire size: RoCEv2 82 B of headers and gap, InfiniBand 26 B
    assert roce.finish_s[0] == pytest.approx((4e6 + packets * sum(HEADERS["roce"])) / LINE_BPS, rel=0.02)
    assert ib.finish_s[0] == pytest.approx((4e6 + packets * sum(HEADERS["infiniband"])) / LINE_BPS, rel=0.02)


# --- cut and extrapolate ------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [4000, 1000])
def test_cut_and_extrapolate_is_within_a_few_percent_of_the_uncut_run(table, budget):
    """InfiniBand (credits, no CC: no slow CC transient): 16 flows of 1 and 4 MB (8 of them 50 us
    later) cut to k = 0.41 and 0.10. Measured: every flow within 3.9% (sprayed packets), the makespan
    within 1%."""
    i = np.arange(16)
    flows = make_flows(i, (i + 5) % 16, np.where(i % 2, 4e6, 1e6), np.where(i < 8, 0.0, 50e-6))
    full, full_c = _run(table, "infiniband", flows, max_packets=10**9)
    cut, cut_c = _run(table, "infiniband", flows, max_packets=budget)
    assert full_c.min_cut_factor == 1.0 and cut_c.min_cut_factor < 0.5
    fct_error = (cut.finish_s - flows.start_s) / (full.finish_s - flows.start_s) - 1
    assert np.abs(fct_error).max() < 0.05
    assert cut.finish_s.max() == pytest.approx(full.finish_s.max(), rel=0.01)


def test_a_cut_roce_phase_is_never_faster_than_its_fair_share(table):
    """DCQCN's slow clock (300 us timer, 2 MB byte counter) does not scale with the cut, so a cut
    RoCE phase is less exact (measured: within 9% at k = 0.26, up to +46% at k = 0.06 on 32 MB
    flows), but it stays at or above the 2:1 fair share, size / (line / 2)."""
    flows = _cross_leaf(4e6)
    for budget in (10**9, 4000, 1000):
        result, _ = _run(table, "roce", flows, max_packets=budget)
        assert result.finish_s.max() >= 4e6 / (LINE_BPS / 2)


def test_counters_have_every_key_and_accumulate(table):
    """An incast background into a 4 MB switch buffer: PFC pauses, counted once per run."""
    roce = transport_for("roce")
    net = PacketPhaseNetwork(table, replace(roce, params=replace(roce.params, buffer_bytes=4e6)))
    flows = _join(_cross_leaf(1e6), background_flows("incast", 0.5, np.arange(16), LINE_BPS, seed=0))
    net.run(flows)
    once = net.counters()
    net.run(flows)
    twice = net.counters()
    keys = {"pause_s", "pause_frames", "credit_stall_s", "ecn_marked_fraction", "drops", "queue_p99_bytes",
            "queue_max_bytes", "packet_runs", "min_cut_factor", "retransmitted_bytes", "trimmed_packets",
            "fec_latency_s"}  # fmt: skip
    assert set(twice.to_json()) == keys
    assert twice.runs == 2 and twice.pause_s == pytest.approx(2 * once.pause_s) and once.pause_s > 0
    assert set(twice.queue_p99_bytes) <= {"switch_to_host", "switch_to_switch"} and twice.queue_p99_bytes


def test_loss_recovery_counters_add_up_over_runs_and_report_the_fec_latency(table):
    """Bit errors on a UET phase: resent bytes counted once per run; the FEC latency per hop as set."""
    uet = named_transport("uet")
    lossy = replace(uet, params=replace(uet.params, ber=1e-6, fec_lane_gbps=100.0))
    net = PacketPhaseNetwork(table, lossy)
    flows = _cross_leaf(1e6)
    net.run(flows)
    once = net.counters()
    net.run(flows)
    twice = net.counters()
    assert once.retransmitted_bytes > 0 and twice.retransmitted_bytes == pytest.approx(2 * once.retransmitted_bytes)
    assert twice.fec_latency_s == fec_latency_s(lossy.params) > 0
    clean = PacketPhaseNetwork(table, uet)
    clean.run(flows)
    assert clean.counters().retransmitted_bytes == 0 and clean.counters().fec_latency_s == 0


def test_transport_name_is_the_family_of_the_cc_and_lossless_pair():
    for name in ("roce", "ib", "uet"):
        chosen = named_transport(name)
        assert transport_name(chosen.cc, chosen.lossless) == chosen.name
    assert transport_name(CongestionControl.NONE, Lossless.PFC) == "custom"


# --- background patterns ------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", [p.value for p in BackgroundPattern])
def test_every_sending_host_offers_load_times_line_rate(pattern):
    hosts = np.arange(100, 140)
    flows = background_flows(pattern, 0.3, hosts, LINE_BPS, seed=2)
    assert np.all(np.isinf(flows.size_bytes)) and np.all(flows.start_s == 0)
    assert np.all(flows.src != flows.dst) and set(flows.src) | set(flows.dst) <= set(hosts.tolist())
    offered = np.bincount(flows.src - 100, flows.max_rate_Bps)
    senders = np.unique(flows.src) - 100
    assert offered[senders] == pytest.approx(0.3 * LINE_BPS)
    assert senders.size >= hosts.size - 1


def test_all_to_all_background_is_sampled_on_large_fabrics():
    flows = background_flows("all-to-all", 1.0, np.arange(8192), LINE_BPS, seed=0)
    assert flows.count == 8192 * MAX_BACKGROUND_FANOUT
    assert background_flows("all-to-all", 1.0, np.arange(5), LINE_BPS, seed=0).count == 20


def test_parse_background():
    spec = parse_background(" Permutation:0.5 ")
    assert (spec.pattern, spec.load, spec.text) == (BackgroundPattern.PERMUTATION, 0.5, "permutation:0.5")
    assert spec.flows(np.arange(4), LINE_BPS, 0).count == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("permutation", "is not PATTERN:LOAD"),
        ("permutaion:0.5", "did you mean permutation"),
        ("incast:0", r"load must be in \(0, 1\]"),
        ("incast:1.5", r"load must be in \(0, 1\]"),
        ("incast:nan", r"load must be in \(0, 1\]"),
        ("incast:half", "load must be a number"),
    ],
)
def test_parse_background_errors_name_background(text, message):
    with pytest.raises(FabricsimError, match=message) as err:
        parse_background(text)
    assert str(err.value).startswith("background: ") and "\n" not in str(err.value)
