"""Ultra Ethernet's transport pieces in the packet kernel (issue 26, item 1): packet spraying over
entropy values, NSCC's sender window, trimming and selective repeat together."""

from __future__ import annotations

import numpy as np
import pytest
from packet_helpers import simulate, star

from fabricsim.api.topologies import build_topology
from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows
from fabricsim.network.packet.params import HEADERS, CongestionControl, Lossless, PacketParams
from fabricsim.network.patterns import Pattern, pattern_flows
from fabricsim.network.phase import named_transport
from fabricsim.topology.routing import Routing

TOPOLOGY = "fat-tree:k=4,gbps=400"  # 16 hosts, 4 core paths between pods
UET = {"entropies": 256.0, "loss_recovery": 1.0, "trimming": 1.0}


def _uet(topo, flows, **kw):
    return simulate(topo, flows, "nscc", "none", routing=Routing.SPRAY, **{**UET, **kw})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spraying_over_entropies_conserves_bytes_and_beats_ecmp_on_a_permutation(seed):
    """ECMP hashes whole flows onto paths and collides; spraying 256 entropy values per flow does
    not (mean and last FCT no worse)."""
    topo = build_topology(TOPOLOGY)
    flows = pattern_flows(Pattern.PERMUTATION, 16, 1e6, seed)
    ecmp = simulate(topo, flows, "none", "pfc", routing=Routing.ECMP, seed=seed)
    uet = _uet(topo, flows, seed=seed)
    np.testing.assert_array_equal(uet.delivered_bytes, flows.size_bytes)
    assert uet.finish_s.max() <= ecmp.finish_s.max()
    assert uet.finish_s.mean() <= ecmp.finish_s.mean()


def test_one_entropy_keeps_a_flow_on_one_path_more_spread_it():
    """A flow's packets with one entropy value hash to one path (ECMP's behaviour); with 16 values
    they spread over the fat-tree's equal-cost links (the data's links: ACKs off, they retrace them)."""
    topo = build_topology(TOPOLOGY)
    flows = make_flows([0], [15], 1e6, 0.0)  # across pods: 6 hops
    one = _uet(topo, flows, entropies=1.0, control_packets=0.0)
    many = _uet(topo, flows, entropies=16.0, control_packets=0.0)
    assert (one.link_tx_bytes > 0).sum() == one.hops[0] == 6
    assert (many.link_tx_bytes > 0).sum() > 6


def test_nscc_keeps_the_incast_queue_shorter_than_no_congestion_control():
    topo = build_topology(TOPOLOGY)
    flows = pattern_flows(Pattern.INCAST, 16, 1e6, 0)
    plain = simulate(topo, flows, "none", "none", routing=Routing.SPRAY, **UET)
    nscc = _uet(topo, flows)
    for run in (plain, nscc):
        np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert nscc.queue_max_bytes.max() < 0.5 * plain.queue_max_bytes.max()


def test_uet_with_a_small_buffer_trims_instead_of_dropping_and_delivers_everything():
    topo = build_topology(TOPOLOGY)
    flows = pattern_flows(Pattern.INCAST, 16, 1e6, 0)
    run = _uet(topo, flows, buffer_bytes=300e3)
    np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert run.drops == 0 and run.trimmed_packets > 0
    assert run.retransmitted_bytes == run.trimmed_packets * 4096  # every trimmed packet resent, once


def test_uet_recovers_bit_errors_by_nack_most_flows_within_one_timeout():
    """Bit errors (1e-6 after FEC: ~3% of 4 KB frames per link) corrupt packets that trimming cannot
    save; the receiver NACKs each one when a later packet of its flow arrives, so most flows finish
    long before one RTO, and only a loss that no packet follows waits for the timeout (measured:
    857 drops, median FCT 37.7 us, last 237.2 us; with 1 MB flows the median was 322 us when
    selective repeat waited one RTO per loss, 39.6 us now)."""
    topo = build_topology(TOPOLOGY)
    flows = pattern_flows(Pattern.PERMUTATION, 16, 244 * 4096, 0)  # whole MTUs: every packet 4,096 B
    run = _uet(topo, flows, ber=1e-6)
    np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert run.drops > 100 and run.trimmed_packets == 0
    assert run.retransmitted_bytes == run.drops * 4096  # each corrupted packet resent once
    fct = run.finish_s - flows.start_s
    assert np.median(fct) < 0.5 * PacketParams().rto_s


def test_entropies_is_a_checked_whole_number():
    assert PacketParams().with_overrides({"entropies": 64.0}).entropies == 64
    for bad in (1.5, 1e6):
        with pytest.raises(FabricsimError, match="entropies must be"):
            PacketParams().with_overrides({"entropies": bad})


def test_receiver_credits_pace_an_incast_to_the_last_hop():
    """RCCC (simplified): after one unscheduled BDP per sender, a receiver grants an MTU of credit per
    full frame's wire time, so a 16 -> 1 incast on a 200 KB buffer loses a few first-round-trip packets
    instead of tens of thousands, and finishes near its wire bytes / line rate (16 MB + 82 B of RoCEv2
    headers and gap per 4,096 B packet at 12.5 GB/s: 1.306 ms)."""
    flows = pattern_flows(Pattern.INCAST, 17, 1e6, 0)
    topo = star(17, 100)
    plain = simulate(topo, flows, "none", "none", buffer_bytes=200e3)
    credit = simulate(topo, flows, "none", "none", buffer_bytes=200e3, rccc=1.0)
    for run in (plain, credit):
        np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert credit.drops < plain.drops / 100
    ideal = (flows.size_bytes + np.ceil(flows.size_bytes / 4096) * sum(HEADERS["roce"])).sum() / topo.line_rate_Bps
    assert ideal < credit.end_s < 1.05 * ideal < plain.end_s


def test_receiver_credits_go_only_to_unfinished_flows():
    """When short flows of an incast end, their share of the receiver's credits passes to the flows
    still sending, so the last hop stays busy to the end (wire bytes / line rate, within 5%). htsim's
    EQDS pacer keeps pulling finished flows (up to 1 BDP each), which cost it ~10% at 255 -> 1
    (benchmarks/data/htsim_comparison.yaml, why_eqds_255); granting finished flows here would leave
    the 4 MB of long flows left after the short ones end at about half the line rate (~1.2 ms)."""
    sizes = np.repeat([0.25e6, 1e6], 8)
    flows = make_flows(np.arange(1, 17), 0, sizes)
    topo = star(17, 100)
    run = simulate(topo, flows, "none", "none", buffer_bytes=200e3, rccc=1.0)
    np.testing.assert_array_equal(run.delivered_bytes, flows.size_bytes)
    assert run.finish_s[:8].max() < 0.5 * run.finish_s[8:].min()  # the short flows end first
    ideal = (sizes + np.ceil(sizes / 4096) * sum(HEADERS["roce"])).sum() / topo.line_rate_Bps
    assert ideal < run.end_s < 1.05 * ideal


def test_the_uet_transport_and_its_sources():
    uet = named_transport("uet")
    assert (uet.lossless, uet.cc, uet.routing) == (Lossless.NONE, CongestionControl.NSCC, Routing.SPRAY)
    assert (uet.params.loss_recovery, uet.params.trimming, uet.params.entropies) == (1.0, 1.0, 256.0)
    assert set(dict(uet.sources)) == {"lossless", "cc", "routing"}
    assert named_transport("roce").cc == CongestionControl.DCQCN and named_transport("ib").lossless == Lossless.CREDIT
    with pytest.raises(FabricsimError, match="transport"):
        named_transport("tcp")


def test_entropy_hashing_is_seeded():
    """The same seed sprays the same way; another seed hashes the entropies onto other links."""
    topo = build_topology(TOPOLOGY)
    flows = make_flows([0, 1, 2], [15, 14, 13], 2e5, 0.0)
    one, again = _uet(topo, flows, seed=3, entropies=4.0), _uet(topo, flows, seed=3, entropies=4.0)
    other = _uet(topo, flows, seed=4, entropies=4.0)
    np.testing.assert_array_equal(one.link_tx_bytes, again.link_tx_bytes)
    assert not np.array_equal(one.link_tx_bytes, other.link_tx_bytes)
