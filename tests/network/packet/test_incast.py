"""N->1 incast on one switch, no congestion control, PFC on (issue 12, "Done when" 2).

The bottleneck (the receiver's port) must run at >= 95% of line rate, every flow must finish
within 10% of N x S / C (FIFO round robin shares the port evenly), and PFC pause frames must
reach the senders' NICs. The 4 MB shared buffer makes the dynamic PFC threshold bite.
"""

from __future__ import annotations

import numpy as np
import pytest
from packet_helpers import simulate, star

from fabricsim.network.patterns import Pattern, pattern_flows

SIZE_BYTES = 1e6


@pytest.mark.parametrize("senders", [8, 16, 64])
def test_incast_runs_at_line_rate_and_pauses_reach_senders(senders):
    topo = star(senders + 1, 400)
    flows = pattern_flows(Pattern.INCAST, senders + 1, SIZE_BYTES, seed=0)
    run = simulate(topo, flows, "none", "pfc", buffer_bytes=4e6)
    ideal_s = senders * SIZE_BYTES / topo.line_rate_Bps
    bottleneck = flows.size_bytes.sum() / run.finish_s.max() / topo.line_rate_Bps
    assert bottleneck >= 0.95
    assert np.all(np.abs(run.finish_s / ideal_s - 1) <= 0.10)
    sender_links = run.link_class == 0
    assert run.pause_frames[sender_links].sum() > 0
    assert run.pause_s[sender_links].sum() > 0
    assert run.drops == 0
    assert run.delivered_bytes.sum() == flows.size_bytes.sum()


def test_pauses_propagate_hop_by_hop_in_a_two_tier_fabric():
    """On a leaf-spine, the receiver's leaf pauses the spine, which pauses the senders' leaf."""
    from fabricsim.topology.builders import LinkParams, leaf_spine

    topo = leaf_spine(2, 1, 8, LinkParams(50e9, 330e-9), oversubscription=8)  # one line-rate uplink
    flows = pattern_flows(Pattern.INCAST, 16, 0.5e6, seed=0)  # hosts 8..15 cross the spine into host 0
    run = simulate(topo, flows, "none", "pfc", buffer_bytes=2e6)
    fabric = run.link_class == 2
    assert run.pause_frames[fabric].sum() > 0
    assert run.pause_frames[run.link_class == 0].sum() > 0
    assert run.drops == 0


def test_static_xoff_threshold_sets_when_pfc_fires():
    topo = star(9, 400)
    flows = pattern_flows(Pattern.INCAST, 9, SIZE_BYTES, seed=0)
    tight = simulate(topo, flows, "none", "pfc", pfc_xoff_bytes=50e3)
    loose = simulate(topo, flows, "none", "pfc", pfc_xoff_bytes=2e6)  # above any ingress's 1 MB
    assert tight.pause_frames.sum() > 0 and loose.pause_frames.sum() == 0
    assert tight.drops == loose.drops == 0
    assert flows.size_bytes.sum() / tight.finish_s.max() / topo.line_rate_Bps >= 0.95


def test_pfc_headroom_covers_the_pause_round_trip_and_no_more():
    """Each switch ingress reserves the bytes that can still arrive once it decides to pause: the
    pause frame's one-way trip plus what is already on the wire (2 x latency x rate) and a packet
    in flight at each end (2 MTU). Star of 9 ports at 400 Gb/s, 330 ns per hop: 2 x 16,500 B +
    2 x 4,096 B = 41,192 B per ingress, 370,728 B for the switch's 9 ingresses."""
    from fabricsim.errors import FabricsimError

    topo = star(9, 400)
    flows = pattern_flows(Pattern.INCAST, 9, SIZE_BYTES, seed=0)
    need = 9 * (2 * 50e9 * 330e-9 + 2 * 4096)
    assert need == pytest.approx(370_728)
    with pytest.raises(FabricsimError) as info:
        simulate(topo, flows, "none", "pfc", buffer_bytes=need - 1)
    assert info.value.field == "buffer" and "(370728 B)" in str(info.value)
    # a shared pool of one packet: nearly every byte waits in headroom, which still never overflows
    run = simulate(topo, flows, "none", "pfc", buffer_bytes=need + 4096)
    assert run.drops == 0 and run.delivered_bytes.sum() == flows.size_bytes.sum()
    assert run.pause_frames.sum() > 0


def test_dynamic_pfc_threshold_holds_an_incast_at_its_equilibrium_queue():
    """Dynamic threshold (HPCC repository switch MMU: Xoff = free shared buffer >> pfc_a_shift, shift
    3 by default, i.e. alpha = 1/8): N ingresses filling alike pause at q = alpha (S - N q), so the
    receiver's queue peaks at N alpha S / (1 + N alpha) of the shared pool S, plus at most the bytes
    in flight when each pause fires (its headroom). Short links (10 ns) keep that margin small."""
    alpha, senders, mtu = 1 / 2**3, 8, 4096
    topo = star(senders + 1, 400, latency_s=10e-9)
    flows = pattern_flows(Pattern.INCAST, senders + 1, SIZE_BYTES, seed=0)
    run = simulate(topo, flows, "none", "pfc", buffer_bytes=4e6)
    headroom = 2 * topo.line_rate_Bps * 10e-9 + 2 * mtu
    shared = 4e6 - (senders + 1) * headroom
    equilibrium = shared * senders * alpha / (1 + senders * alpha)
    assert equilibrium <= run.queue_max_bytes.max() <= equilibrium + senders * headroom
    assert run.drops == 0
