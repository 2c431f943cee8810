"""The link layer under the packets (issue 26, item 4): RS(544,514) FEC latency per hop and the
post-FEC bit-error rate, whose losses the transport recovers."""

from __future__ import annotations

import re

import numpy as np
import pytest
from packet_helpers import simulate, star

from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows
from fabricsim.network.packet.params import FEC_LATENCY_S, HEADERS, PacketParams, parse_cc_params
from fabricsim.topology.builders import LinkParams, leaf_spine


def test_kp4_fec_latency_by_lane_generation():
    """Two codeword times of 5,440 bits at the lane's signalling rate: 102.4 ns at 100G lanes."""
    assert FEC_LATENCY_S[100] == pytest.approx(102.4e-9)
    assert FEC_LATENCY_S[50] == pytest.approx(2 * FEC_LATENCY_S[100])
    assert FEC_LATENCY_S[200] == pytest.approx(FEC_LATENCY_S[100] / 2)


def test_fec_latency_is_added_to_every_hop_of_the_path():
    topo = star(3, 400)
    flows = make_flows([1], 2, 1e6, 0.0)
    plain = simulate(topo, flows)
    fec = simulate(topo, flows, fec_lane_gbps=100.0)
    hops = 2  # host -> switch -> host
    assert plain.fec_latency_s == 0.0 and fec.fec_latency_s == pytest.approx(102.4e-9)
    np.testing.assert_allclose(fec.ideal_fct_s - plain.ideal_fct_s, hops * 102.4e-9, rtol=1e-9)
    np.testing.assert_allclose(fec.finish_s - plain.finish_s, hops * 102.4e-9, rtol=1e-6)


def _ber_run(ber: float, recovery: float):
    """A 4-flow permutation of 2 MB over one 400 Gb/s switch, PFC (no buffer drops)."""
    flows = make_flows([1, 2, 3, 4], [2, 3, 4, 1], 2e6, 0.0)
    return flows, simulate(star(5, 400), flows, "none", "pfc", ber=ber, loss_recovery=recovery)


@pytest.mark.parametrize("recovery", [0.0, 1.0], ids=["go-back-n", "selective"])
def test_a_higher_bit_error_rate_resends_more_and_lengthens_the_tail(recovery):
    """At 1e-6 a 4,096 B packet is lost on a hop with 1 - (1 - 1e-6)^32768 = 3.2%; at 1e-12 with
    3.3e-8. Every byte still arrives; the losses cost resent bytes and tail FCT."""
    flows, clean = _ber_run(1e-12, recovery)
    _, noisy = _ber_run(1e-6, recovery)
    for run in (clean, noisy):
        np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert noisy.drops > 0 and noisy.pause_frames.sum() == 0
    assert noisy.retransmitted_bytes > clean.retransmitted_bytes
    assert (noisy.finish_s - flows.start_s).max() > (clean.finish_s - flows.start_s).max()


def test_ber_loss_fraction_follows_the_closed_form():
    """Each packet sent is lost on its first hop with p = 1 - (1 - BER)^bits, else on its second
    with p again: p (2 - p) per packet (binomial; within 5 sigma; all but each flow's last packet
    are 4,096 B of payload in a frame of 4,096 + 62 B of RoCEv2 headers: the bits at risk)."""
    _, run = _ber_run(1e-6, 1.0)
    p = -np.expm1(8 * (4096 + HEADERS["roce"][0]) * np.log1p(-1e-6))
    expected = run.sent_packets * p * (2 - p)
    assert abs(run.drops - expected) < 5 * np.sqrt(expected)


def test_link_layer_parameters_are_checked():
    assert parse_cc_params(["fec_lane_gbps=100", "ber=1e-9"]) == {"fec_lane_gbps": 100.0, "ber": 1e-9}
    for bad in ("400", "fast"):
        with pytest.raises(FabricsimError, match=re.escape("fec_lane_gbps must be one of 0 | 50 | 100 | 200")):
            PacketParams().with_overrides(parse_cc_params([f"fec_lane_gbps={bad}"]))
    with pytest.raises(FabricsimError, match=r"ber must be in \[0, 1e-05\]"):
        PacketParams().with_overrides({"ber": 1e-3})


def _class_ber_run(topo, **ber):
    """A 2 MB permutation of every host under PFC, selective repeat, with the given BER keys."""
    hosts = topo.hosts
    flows = make_flows(list(range(hosts)), [(h + hosts // 2) % hosts for h in range(hosts)], 2e6, 0.0)
    return flows, simulate(topo, flows, "none", "pfc", loss_recovery=1.0, **ber)


def test_ber_per_link_class_corrupts_only_those_links():
    """``ber_fabric`` sets the links between switches, ``ber_edge`` the host <-> switch links; on one
    switch there are no fabric links, so a noisy fabric loses nothing there."""
    star4 = star(4, 400)
    _, quiet = _class_ber_run(star4, ber_fabric=1e-5)
    _, edge = _class_ber_run(star4, ber_edge=1e-5)
    assert quiet.drops == 0 and quiet.retransmitted_bytes == 0
    assert edge.drops > 0 and edge.retransmitted_bytes > 0
    two_tier = leaf_spine(2, 2, 2, LinkParams(400e9 / 8, 1e-6))  # every flow crosses a spine
    flows, fabric = _class_ber_run(two_tier, ber=1e-5, ber_edge=0.0)
    np.testing.assert_array_equal(fabric.delivered_bytes, flows.size_bytes)
    assert fabric.drops > 0
    _, overridden = _class_ber_run(two_tier, ber=1e-5, ber_edge=0.0, ber_fabric=0.0)
    assert overridden.drops == 0


def test_ber_per_link_class_keys_are_checked():
    with pytest.raises(FabricsimError, match=r"ber_fabric must be in \[0, 1e-05\]"):
        PacketParams().with_overrides(parse_cc_params(["ber_fabric=0.5"]))
    assert parse_cc_params(["ber-edge=1e-9"]) == {"ber_edge": 1e-9}
