"""Conservation and losslessness (issue 12, "Done when" 1): bytes delivered = bytes offered on
every workload; with PFC or credits nothing is ever dropped; without them a buffer overflow drops
packets (and retransmission still delivers every byte). Also: determinism under a seed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packet_helpers import simulate, star

from fabricsim.api.topologies import build_topology as parse_topology
from fabricsim.network.base import FlowSet, make_flows
from fabricsim.network.flowsizes import FlowSizeCdf, poisson_flows
from fabricsim.network.packet.params import HEADERS
from fabricsim.network.patterns import Pattern, pattern_flows
from fabricsim.topology.routing import Routing

WORKLOADS = [
    ("incast", lambda: pattern_flows(Pattern.INCAST, 16, 300e3, 0)),
    ("all-to-all", lambda: pattern_flows(Pattern.ALL_TO_ALL, 16, 64e3, 0)),
    ("permutation", lambda: pattern_flows(Pattern.PERMUTATION, 16, 500e3, 1)),
    ("websearch", lambda: poisson_flows(FlowSizeCdf.WEBSEARCH, 16, 0.6, 200e-6, (50e9, 3))),
]
TOPOLOGY = "fat-tree:k=4,gbps=400"  # 16 hosts, 3 tiers


@pytest.mark.parametrize("lossless", ["pfc", "credit"])
@pytest.mark.parametrize("cc", ["none", "dcqcn", "hpcc"])
@pytest.mark.parametrize(("name", "make"), WORKLOADS, ids=[w[0] for w in WORKLOADS])
def test_lossless_modes_deliver_every_byte_without_drops(name, make, cc, lossless):
    flows = make()
    run = simulate(parse_topology(TOPOLOGY), flows, cc, lossless, buffer_bytes=3e6)
    assert run.drops == 0
    np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert np.all(run.finish_s >= flows.start_s)


def test_lossy_buffer_overflow_drops_and_retransmission_still_delivers():
    topo = star(9, 100)
    flows = pattern_flows(Pattern.INCAST, 9, 1e6, 0)
    run = simulate(topo, flows, "none", "none", buffer_bytes=200e3)
    assert run.drops > 0
    assert run.pause_frames.sum() == 0
    np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    lossless = simulate(topo, flows, "none", "pfc", buffer_bytes=200e3)
    assert lossless.drops == 0 and lossless.pause_frames.sum() > 0


def test_credit_mode_stalls_instead_of_pausing():
    topo = star(9, 100)
    flows = pattern_flows(Pattern.INCAST, 9, 1e6, 0)
    run = simulate(topo, flows, "none", "credit")
    assert run.drops == 0 and run.pause_frames.sum() == 0
    assert run.credit_stall_s.sum() > 0
    bottleneck = flows.size_bytes.sum() / run.finish_s.max() / topo.line_rate_Bps
    assert bottleneck >= 0.95


@settings(max_examples=12)
@given(
    senders=st.integers(2, 12),
    size=st.integers(1, 300_000),
    cc=st.sampled_from(["none", "dcqcn", "hpcc"]),
    lossless=st.sampled_from(["pfc", "credit", "none"]),
    spray=st.booleans(),
)
def test_conservation_property(senders, size, cc, lossless, spray):
    """Any incast size, CC and lossless mode: every byte arrives, no drop when lossless, and no flow
    beats its ideal FCT (line rate, empty network)."""
    topo = parse_topology("leaf-spine:leaves=2,spines=2,hosts_per_leaf=8,gbps=100")
    flows = pattern_flows(Pattern.INCAST, senders + 1, float(size), 0)
    routing = Routing.SPRAY if spray else Routing.ECMP
    run = simulate(topo, flows, cc, lossless, buffer_bytes=1e6, routing=routing)
    np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    if lossless != "none":
        assert run.drops == 0
    assert np.all(run.finish_s - flows.start_s >= run.ideal_fct_s * (1 - 1e-9))


@settings(max_examples=10, deadline=None)
@given(
    senders=st.integers(2, 10),
    size=st.integers(1, 300_000),
    classes=st.integers(2, 4),
    data=st.data(),
    sched=st.sampled_from([0.0, 1.0]),
    lossless=st.sampled_from(["pfc", "none"]),
)
def test_conservation_property_with_traffic_classes(senders, size, classes, data, sched, lossless):
    """An incast (class 0) beside background flows in a random class (strict or DWRR with random
    weights, each class lossless or lossy at random under PFC): every job byte arrives, a lossless
    class never drops, no job flow beats its ideal FCT, and no egress queue exceeds the buffer."""
    topo = parse_topology("leaf-spine:leaves=2,spines=2,hosts_per_leaf=8,gbps=100")
    job = pattern_flows(Pattern.INCAST, senders + 1, float(size), 0)
    bg_src = np.array([senders + 1, senders + 2])
    n = job.count + bg_src.size
    flows = FlowSet(np.concatenate([job.src, bg_src]), np.concatenate([job.dst, [0, 0]]),
                    np.concatenate([job.size_bytes, [np.inf, np.inf]]), np.zeros(n), np.arange(n),
                    np.concatenate([np.full(job.count, np.inf), np.full(2, topo.line_rate_Bps / 2)]))  # fmt: skip
    weights = tuple(data.draw(st.lists(st.sampled_from([1.0, 2.0, 5.0]), min_size=classes, max_size=classes)))
    lossy = data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=classes, max_size=classes))
    per_class = {"class_lossless": tuple(1.0 - x for x in lossy)} if lossless == "pfc" else {}
    run = simulate(topo, flows, "none", lossless, buffer_bytes=1e6, classes=float(classes), class_sched=sched,
                   class_weights=weights, background_class=float(data.draw(st.integers(0, classes - 1))),
                   loss_recovery=1.0, **per_class)  # fmt: skip
    finite = np.isfinite(flows.size_bytes)
    np.testing.assert_array_equal(run.delivered_bytes[finite], flows.size_bytes[finite])
    if lossless == "pfc":
        assert all(run.class_drops[c] == 0 for c in range(classes) if lossy[c] == 0.0)
    assert sum(run.class_drops) == run.drops
    assert np.all(run.finish_s[finite] >= run.ideal_fct_s[finite] * (1 - 1e-9))
    assert run.queue_max_bytes.max() <= 1e6


# Same seed, same result: two processes with different hash seeds print the same bytes
# (tests/test_determinism.py, "traffic-packet-dcqcn": DCQCN, PFC and spraying).


@pytest.mark.parametrize(
    "topology",
    ["dgx-h100:gpus=16", "dragonfly:a=2,p=2,h=1", "torus:dims=4x4", "rail-optimized:nodes=4,rails=2,radix=8"],
)
def test_every_builder_runs_including_multi_port_endpoints(topology):
    """DGX GPUs have two ports (NVLink switch and NIC): each port is its own NIC scheduler."""
    topo = parse_topology(topology)
    flows = pattern_flows(Pattern.PERMUTATION, topo.hosts, 128e3, 0)
    run = simulate(topo, flows, "dcqcn", "pfc", routing=Routing.SPRAY)
    np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert run.drops == 0


def test_a_fractional_flow_size_is_carried_as_whole_bytes() -> None:
    """A collective's chunk S/p need not be a whole number of bytes; packets carry whole bytes, so
    the packet model rounds the size up once (it used to stall with the flow undelivered)."""
    import numpy as np

    from fabricsim.api.topologies import build_topology
    from fabricsim.network.base import make_flows
    from fabricsim.network.packet.model import PacketNetwork
    from fabricsim.network.packet.params import CongestionControl, Lossless, PacketParams, RunOptions
    from fabricsim.topology.routing import Routing, route_table

    topo = build_topology("leaf-spine:leaves=2,spines=2,hosts_per_leaf=2,gbps=400")
    opts = RunOptions(CongestionControl.NONE, Lossless.PFC, topo.line_rate_Bps, 0.0, 0)
    net = PacketNetwork(route_table(topo), Routing.ECMP, PacketParams(), opts)
    run = net.simulate(make_flows([0, 1], [3, 2], [100.5, 4096.25]))
    assert np.array_equal(run.flows.size_bytes, [101.0, 4097.0])
    assert np.array_equal(run.delivered_bytes, run.flows.size_bytes)


def test_a_dropped_packet_is_resent_one_retransmission_timeout_later():
    """Lossy mode: two one-packet flows meet at a switch that holds one packet; the second is dropped,
    its sender learns of it one RTO (100 us, the default) later and sends it again, so it lands one
    RTO plus at most two more trips after the first."""
    topo = star(3, 100)
    flows = make_flows([1, 2], 0, 4096.0, 0.0)
    run = simulate(topo, flows, "none", "none", buffer_bytes=4096 + HEADERS["roce"][0])  # one frame
    assert run.drops == 1
    first, resent = sorted(run.finish_s)
    assert first == pytest.approx(run.ideal_fct_s[0])
    assert 100e-6 <= resent - first <= 100e-6 + 2 * run.ideal_fct_s[0]
