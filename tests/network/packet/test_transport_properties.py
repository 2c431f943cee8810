"""Physical bounds for every transport (issue 26, "Done when"): RoCE (PFC, DCQCN, ECMP), InfiniBand
(credits, adaptive routing as spraying) and Ultra Ethernet (lossy with trimming, NSCC, entropy
spraying), each with either loss recovery, with or without bit errors, FEC latency and receiver
credits: every byte arrives,
nothing is dropped by a lossless fabric's buffers, no flow beats the empty network, no queue
outgrows its switch's buffer. Fresh randomness on every run (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.api.topologies import build_topology
from fabricsim.network.base import make_flows
from fabricsim.network.packet.model import PacketNetwork
from fabricsim.network.packet.params import Lossless, RunOptions, resolved
from fabricsim.network.phase import named_transport
from fabricsim.topology.routing import route_table

TOPOLOGY = build_topology("fat-tree:k=4,gbps=400")
MTU = 4096.0


@settings(max_examples=25, deadline=None)
@given(
    transport=st.sampled_from(["roce", "ib", "uet"]),
    recovery=st.sampled_from([0.0, 1.0]),
    ber=st.sampled_from([0.0, 1e-6]),
    fec=st.sampled_from([0.0, 100.0]),
    rccc=st.sampled_from([0.0, 1.0]),
    pairs=st.lists(st.tuples(st.integers(0, 15), st.integers(0, 15)), min_size=1, max_size=8),
    packets=st.integers(1, 24),
    seed=st.integers(0, 2**16),
)
def test_every_transport_conserves_bytes_and_keeps_the_physical_bounds(
    transport, recovery, ber, fec, rccc, pairs, packets, seed
):
    pairs = [(s, d) for s, d in pairs if s != d] or [(0, 15)]
    src, dst = np.array(pairs).T
    flows = make_flows(src, dst, packets * MTU - seed % 100, 0.0)
    chosen = named_transport(transport)
    params = replace(chosen.params, loss_recovery=recovery, ber=ber, fec_lane_gbps=fec, rccc=rccc)
    if chosen.lossless == Lossless.NONE:
        params = replace(params, buffer_bytes=8 * MTU)  # small enough to overflow (and trim)
    opts = RunOptions(chosen.cc, chosen.lossless, TOPOLOGY.line_rate_Bps, 0.0, seed)
    run = PacketNetwork(route_table(TOPOLOGY), chosen.routing, params, opts).simulate(flows)
    np.testing.assert_array_equal(run.delivered_bytes, run.flows.size_bytes)
    assert np.all(run.finish_s - flows.start_s >= run.ideal_fct_s * (1 - 1e-12))  # FEC latency included
    assert run.fec_latency_s == pytest.approx(102.4e-9 if fec else 0.0)
    if ber == 0.0 and chosen.lossless != Lossless.NONE:
        assert run.drops == 0 and run.retransmitted_bytes == 0
    buffer = resolved(params, TOPOLOGY.line_rate_Bps).buffer_bytes
    assert run.queue_max_bytes.max() <= buffer + params.trim_bytes * run.trimmed_packets
