"""Queue percentiles cover the whole switch buffer (issue 26: p99 was capped at 16,777,216 B)."""

from __future__ import annotations

import numpy as np

from fabricsim.api.packet_traffic import PacketTrafficSpec, packet_traffic
from fabricsim.network.packet.kernel import HIST_BINS
from fabricsim.network.packet.params import PacketParams, hist_bin_bytes, resolved
from fabricsim.network.packet.summary import queue_percentile

OLD_CEILING_BYTES = HIST_BINS * 4096  # 4,096 MTU bins of 4,096 B: where every p99 used to stop


def test_the_bins_cover_the_buffer():
    for gbps in (100, 400, 800):
        p = resolved(PacketParams(), gbps * 1e9 / 8)
        assert hist_bin_bytes(p) * HIST_BINS >= p.buffer_bytes
        assert hist_bin_bytes(p) >= p.mtu_bytes
    small = resolved(PacketParams(buffer_bytes=2e6), 50e9)
    assert hist_bin_bytes(small) == small.mtu_bytes  # a small buffer keeps MTU resolution


def test_a_percentile_is_its_bin_edge_and_never_above_the_largest_queue():
    hist = np.zeros(HIST_BINS)
    hist[10] = 99
    hist[HIST_BINS - 1] = 1  # everything past the range lands in the last bin
    assert queue_percentile(hist, 1000.0, 0.5, 5e9) == 11 * 1000.0
    assert queue_percentile(hist, 1000.0, 1.0, 5e9) == HIST_BINS * 1000.0
    assert queue_percentile(hist, 1000.0, 1.0, 2.5e6) == 2.5e6
    assert queue_percentile(np.zeros(HIST_BINS), 1000.0, 0.99, 0.0) == 0.0


def test_a_deep_incast_queue_p99_goes_past_the_old_ceiling():
    spec = PacketTrafficSpec(pattern="incast", topology="fat-tree:k=4", size="4MB", lossless="none")
    queues = packet_traffic(spec).result.packet["queue_bytes"]["switch_to_host"]
    assert queues["max"] > OLD_CEILING_BYTES
    assert OLD_CEILING_BYTES < queues["p99"] <= queues["max"]
