"""Headers on every data packet and control packets through the queues (issue 26, item 3):
a data packet's frame is its payload + its transport's headers (params.HEADERS) and it takes the
Ethernet gap on the wire; ACKs, NACKs and CNPs (params.CONTROL) return over the reverse path and
share the links with the data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from packet_helpers import simulate, star

from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows
from fabricsim.network.packet.params import CONTROL, HEADERS

MB = 1e6
PACKETS = math.ceil(MB / 4096)  # 245 packets of a 1 MB flow


def _link(run, topo, src: int, dst: int) -> int:
    """The id of the link src -> dst (nodes)."""
    return int(np.flatnonzero((topo.link_src == src) & (topo.link_dst == dst))[0])


@pytest.mark.parametrize(
    ("cc", "lossless", "family"),
    [("none", "pfc", "roce"), ("none", "credit", "infiniband"), ("nscc", "none", "uet")],
)
def test_every_data_packet_carries_its_transports_headers(cc, lossless, family):
    """The sender's port carries payload + 245 x (headers + gap); alone on the network the flow
    finishes at the ideal time that counts them, later than payload / line rate would."""
    topo = star(3, 400)
    flows = make_flows([1], 2, MB, 0.0)
    run = simulate(topo, flows, cc, lossless)
    header, gap = HEADERS[family]
    up = _link(run, topo, topo.endpoints[1], topo.link_dst[topo.link_src == topo.endpoints[1]][0])
    assert run.link_tx_bytes[up] == pytest.approx(MB + PACKETS * (header + gap))
    bare = simulate(topo, flows, cc, lossless, header_bytes=0.0, gap_bytes=0.0)
    assert run.finish_s[0] == pytest.approx(run.ideal_fct_s[0], rel=1e-3)
    assert run.finish_s[0] - bare.finish_s[0] == pytest.approx(PACKETS * (header + gap) / topo.line_rate_Bps, rel=0.02)


def test_plain_acks_cross_the_reverse_path_one_per_ack_every_packets():
    """RoCE without CC: one 66 B ACK (+ 20 B gap) per delivered packet, or per 4 with ack_every=4
    (and one for the flow's last packet), leave the receiver's port and cross the switch back to the
    sender (the run ends at the last delivery: the last few ACKs are still on their way there); none
    without control packets."""
    topo = star(3, 400)
    flows = make_flows([1], 2, MB, 0.0)
    sw = int(topo.link_dst[topo.link_src == topo.endpoints[2]][0])
    back = [_link(None, topo, topo.endpoints[2], sw), _link(None, topo, sw, topo.endpoints[1])]
    ack = CONTROL["roce"][0] + HEADERS["roce"][1]
    every = simulate(topo, flows, "none", "pfc")
    assert every.link_tx_bytes[back[0]] == PACKETS * ack
    assert (PACKETS - 10) * ack <= every.link_tx_bytes[back[1]] < PACKETS * ack
    fourth = simulate(topo, flows, "none", "pfc", ack_every=4.0)
    assert fourth.link_tx_bytes[back[0]] == math.ceil(PACKETS / 4) * ack
    off = simulate(topo, flows, "none", "pfc", control_packets=0.0)
    np.testing.assert_array_equal(off.link_tx_bytes[back], 0.0)


def test_acks_share_the_links_with_the_data():
    """Two hosts sending to each other: each port carries its data and the other flow's ACKs, so
    both finish later by the ACKs' share of the wire (86 B per 4,178 B), not without control packets."""
    topo = star(3, 400)
    flows = make_flows([1, 2], [2, 1], 4 * MB, 0.0)
    with_acks = simulate(topo, flows, "none", "pfc")
    without = simulate(topo, flows, "none", "pfc", control_packets=0.0)
    share = (CONTROL["roce"][0] + HEADERS["roce"][1]) / (4096 + sum(HEADERS["roce"]))
    np.testing.assert_allclose(with_acks.finish_s / without.finish_s, 1 + share, rtol=2e-3)


def test_cnps_are_packets_of_their_own_size():
    """DCQCN on an 8 -> 1 incast: the receiver's port carries ACKs (86 B on the wire) and CNPs
    (78 + 20 B): its bytes less the ACKs' are a positive whole number of CNPs."""
    topo = star(9, 400)
    flows = make_flows(list(range(1, 9)), 0, MB, 0.0)
    run = simulate(topo, flows, "dcqcn", "pfc", kmin_bytes=20e3, kmax_bytes=200e3)
    gap = HEADERS["roce"][1]
    rx = topo.endpoints[0]
    port = _link(run, topo, rx, int(topo.link_dst[topo.link_src == rx][0]))
    cnp_bytes = run.link_tx_bytes[port] - 8 * PACKETS * (CONTROL["roce"][0] + gap)
    cnps = cnp_bytes / (CONTROL["roce"][1] + gap)
    assert cnps >= 1 and cnps == pytest.approx(round(cnps), abs=1e-6)
    assert run.ecn_marked >= cnps


def test_control_packets_are_not_paused_and_hold_no_buffer():
    """A PFC-paused 16 -> 1 incast with HPCC: feedback keeps flowing (every flow completes, no
    drops) and the receiver's ACKs cross the same switch the data fills."""
    topo = star(17, 400)
    flows = make_flows(list(range(1, 17)), 0, MB, 0.0)
    run = simulate(topo, flows, "hpcc", "pfc", pfc_xoff_bytes=8 * 4096.0)
    np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert run.drops == 0 and run.pause_frames.sum() > 0


def test_a_drop_tail_queue_limit_drops_above_it_in_a_lossy_fabric():
    """Lossy 4 -> 1 incast, selective repeat: with the default shared buffer (12.8 MB at 400G) nothing
    is dropped; with queue_bytes = 8 frames the receiver's egress drops (or, with trimming, trims)
    what would exceed it, never holds more, and every byte still arrives."""
    topo = star(5, 400)
    flows = make_flows([1, 2, 3, 4], 0, MB, 0.0)
    limit = 8 * (4096 + HEADERS["roce"][0])
    free = simulate(topo, flows, "none", "none", loss_recovery=1.0)
    capped = simulate(topo, flows, "none", "none", loss_recovery=1.0, queue_bytes=limit)
    trimmed = simulate(topo, flows, "none", "none", loss_recovery=1.0, queue_bytes=limit, trimming=1.0)
    assert free.drops == 0 and free.queue_max_bytes.max() > limit
    assert capped.drops > 0 and capped.queue_max_bytes.max() <= limit
    assert trimmed.trimmed_packets > 0 and trimmed.drops == 0
    for run in (capped, trimmed):
        np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)


def test_a_buffer_or_queue_cap_below_one_frame_is_refused():
    """A 4,096 B buffer cannot hold a 4,096 B packet with its 62 B of RoCEv2 headers: every packet
    would be dropped and resent for ever (the run never ended)."""
    topo = star(3, 100)
    flows = make_flows([1], 0, 4096.0, 0.0)
    with pytest.raises(FabricsimError, match="cannot hold one 4158 B frame"):
        simulate(topo, flows, "none", "none", buffer_bytes=4096)
    with pytest.raises(FabricsimError, match="queue_bytes=4096 cannot hold one 4158 B frame"):
        simulate(topo, flows, "none", "none", queue_bytes=4096)
