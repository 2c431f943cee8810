"""Link credits on a torus (issue: credits on a torus as fast as PFC).

1. A ring of credit-controlled links with one buffer per link can deadlock: every chip of a 4x4x4
   slice sends to the chip two steps along x, so on each x ring the flows that route the same way
   hold each other's buffers (with 64 KiB of credit on every link, the chips' own included): a
   cyclic buffer dependency (Dally & Seitz 1987; Dally & Towles, "Principles and Practices of
   Interconnection Networks", ch. 14). Two virtual channels with a dateline per dimension
   (kernel docstring, vc.py) break the cycle.
2. The permutation's gap between credits and PFC is the credits' buffer depth, not a cycle: with
   1 MiB of credit per ingress the credit run is as fast as PFC (whose dynamic threshold on a
   router never pauses here), and the stalls fall on wraparound and other links alike.
"""

from __future__ import annotations

import numpy as np
import pytest
from packet_helpers import simulate

from fabricsim.api.packet_traffic import PacketTrafficSpec, packet_traffic
from fabricsim.api.topologies import build_topology
from fabricsim.network.patterns import Pattern, pattern_flows

TORUS = "ocs-torus:4x4x4"


def _shift_two_along_x(path, hosts: int = 64) -> str:
    """A traffic matrix: chip (x, y, z) -> (x + 2 mod 4, y, z), 1 MB each (chips are numbered x fastest,
    topology/ocs.py)."""
    rows = [f"{h},{h - h % 4 + (h % 4 + 2) % 4},1000000,0" for h in range(hosts)]
    path.write_text("src,dst,bytes,start_s\n" + "\n".join(rows) + "\n")
    return str(path)


def test_a_torus_ring_under_link_credits_does_not_deadlock(tmp_path):
    """Without virtual channels the kernel stopped with undelivered flows (RuntimeError)."""
    spec = PacketTrafficSpec(pattern=None, matrix=_shift_two_along_x(tmp_path / "shift.csv"), topology=TORUS,
                             seed=1, lossless="credit", cc_params=("credit_bytes=65536",))  # fmt: skip
    run = packet_traffic(spec).run
    assert np.array_equal(run.delivered_bytes, run.flows.size_bytes)


def test_the_permutations_credit_gap_is_buffer_depth_not_a_cycle():
    topo = build_topology(TORUS)
    flows = pattern_flows(Pattern.PERMUTATION, topo.hosts, 1e6, 1)
    pfc = simulate(topo, flows, lossless="pfc", seed=1)
    deep = simulate(topo, flows, lossless="credit", seed=1, credit_bytes=2.0**20)
    assert pfc.pause_s.sum() == 0.0  # PFC's threshold on these routers is never reached
    assert deep.finish_s.max() <= 1.02 * pfc.finish_s.max()
    assert deep.credit_stall_s.sum() == 0.0
    shallow = simulate(topo, flows, lossless="credit", seed=1)  # the default: 2 BDP + 2 MTU per ingress
    assert shallow.finish_s.max() > 1.2 * pfc.finish_s.max()
    wrap = _wraparound(topo)
    stall = shallow.credit_stall_s
    assert stall[wrap].mean() < 1.5 * stall[~wrap & (shallow.link_class == 2)].mean()  # not a cycle's links


def _wraparound(topo) -> np.ndarray:
    """Router links from coordinate 3 to 0 (or back) in some dimension (routers follow the chips)."""
    src, dst, hosts = topo.link_src.astype(np.int64), topo.link_dst.astype(np.int64), topo.hosts
    routers = (src >= hosts) & (dst >= hosts)
    a, b = src - hosts, dst - hosts
    ca = np.stack([a % 4, a // 4 % 4, a // 16])
    cb = np.stack([b % 4, b // 4 % 4, b // 16])
    return routers & np.any(np.abs(ca - cb) == 3, axis=0)


NOT_DIMENSION_ORDERED = (
    "open: datelines make a torus deadlock-free only under dimension-order routing; ECMP's "
    "minimal routes take the dimensions in any order (2,614 of an all-to-all's 4,032 flows "
    "here), so one credit per VC still closes a cycle across dimensions"
)


@pytest.mark.xfail(strict=True, raises=RuntimeError, reason=NOT_DIMENSION_ORDERED)
def test_an_all_to_all_with_one_credit_per_channel_does_not_deadlock():
    spec = PacketTrafficSpec(pattern="all-to-all", topology=TORUS, size="16KB", seed=0, lossless="credit",
                             cc_params=("credit_bytes=4096",))  # fmt: skip
    run = packet_traffic(spec).run
    assert np.array_equal(run.delivered_bytes, run.flows.size_bytes)


def test_a_systems_torus_ring_under_link_credits_does_not_deadlock(tmp_path):
    """The same rings in a TPU v5p system's ICI cube (topology/system.py): its routers had no virtual
    channels (vc.py knew torus topologies by name only) and the kernel stopped with undelivered flows."""
    matrix = _shift_two_along_x(tmp_path / "shift.csv")
    spec = PacketTrafficSpec(pattern=None, matrix=matrix, topology="tpu-v5p:gpus=64", seed=1, lossless="credit",
                             cc_params=("credit_bytes=65536",))  # fmt: skip
    run = packet_traffic(spec).run
    assert np.array_equal(run.delivered_bytes, run.flows.size_bytes)
