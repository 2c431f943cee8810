"""NCCL's send/recv channel rule (collectives/p2p.py), checked against NCCL 2.30.7's source
(NVIDIA/nccl @ 5067397c):

* src/graph/paths.cc ncclTopoGetNchannels: NVLink peer ``*nChannels = 2 * max(1, (int)(path->bw / nvlBw))``;
* src/graph/paths.cc ncclTopoComputeP2pChannels: ``p2pnChannels = pow2Up(min(nChannels, MAXCHANNELS))``,
  ``p2pnChannelsPerPeer = min(p2pnChannels, pow2Up(p2pnChannelsPerPeer))`` (single node);
* src/enqueue.cc scheduleP2pTasksToPlan: ``nChannelsMax = p2pnChannelsPerPeer``;
  ``while (nChannelsMin * nRanks > comm->p2pnChannels && nChannelsMin > 1) nChannelsMin /= 2;``
* src/enqueue.cc addP2pToPlan: ``minPartSize = stepSize / 8``, ``maxPartSize = stepSize * 32`` (one node),
  ``nChannels = min(nChannelsMin, divUp(bytes, minPartSize))``, doubled
  ``while (partSize > maxPartSize && nChannels <= nChannelsMax / 2)``;
* src/init.cc: ``P2P_NVL_CHUNKSIZE`` 512 KiB; src/graph/paths.cc ``P2P_PER_CHANNEL_NET_BW`` 14 GB/s.
"""

import pytest

from fabricsim.catalog import load_system
from fabricsim.collectives import CollectiveOp, estimate, place_group
from fabricsim.collectives.nccl import constants
from fabricsim.collectives.p2p import channel_rule, channels_per_peer, p2p_channels, pow2_up, send_recv_channels

MiB = 2**20
LATENCY_S = 15e-6  # launch + one NVLink hop (~12 us in NCCL 2.30's tables)


@pytest.fixture(scope="module")
def a100():
    return load_system("dgx-a100")


def test_constants_are_nccls() -> None:
    nccl = constants()
    assert nccl.p2p_chunk_bytes["nvlink"] == 512 * 1024
    assert nccl.p2p_chunk_bytes["pci"] == 128 * 1024
    assert (nccl.p2p_min_part_divisor, nccl.p2p_max_part_multiple) == (8, 32)
    assert nccl.p2p_per_channel_Bps == pytest.approx(14e9)
    assert nccl.p2p_max_channels == 64


def test_pow2_up() -> None:
    assert [pow2_up(n) for n in (1, 2, 3, 24, 32, 36)] == [1, 2, 4, 32, 32, 64]


def test_dgx_a100_channel_counts(a100) -> None:
    """12 NVLinks -> 2 x 12 = 24 -> 32 channels per peer; 24 ring channels -> p2pnChannels 32."""
    group = place_group(a100, 8)
    nccl = constants()
    assert p2p_channels(group, nccl) == 32
    assert channels_per_peer(group, nccl) == 32
    rule = channel_rule(group, nccl)
    assert (rule.n_min, rule.n_max) == (4, 32)  # 4 x 8 ranks = 32 channels
    assert (rule.min_part_bytes, rule.max_part_bytes) == (64 * 1024, 16 * MiB)


def test_eight_ranks_8_channels_at_128_mib_16_from_256_mib(a100) -> None:
    group, nccl = place_group(a100, 8), constants()
    assert send_recv_channels(128 * MiB, group, nccl) == 8  # 4 -> 8: part 16 MiB, not > 16 MiB
    assert send_recv_channels(128 * MiB + 1, group, nccl) == 16
    assert send_recv_channels(256 * MiB, group, nccl) == 16
    assert send_recv_channels(512 * MiB, group, nccl) == 32  # NCCL 2.30: nChannelsMax = 32
    assert send_recv_channels(1024**3, group, nccl) == 32
    assert send_recv_channels(64 * 1024, group, nccl) == 1  # divUp(bytes, minPartSize)
    assert send_recv_channels(1 * MiB, group, nccl) == 4


def test_two_ranks_start_at_half_the_p2p_channels(a100) -> None:
    """2 ranks: nChannelsMin = 16 (16 x 2 <= 32), so a PP transfer of 1-256 MiB runs on 16 channels."""
    group, nccl = place_group(a100, 2), constants()
    assert channel_rule(group, nccl).n_min == 16
    assert send_recv_channels(1 * MiB, group, nccl) == 16
    assert send_recv_channels(256 * MiB, group, nccl) == 16
    assert send_recv_channels(256 * MiB + 1, group, nccl) == 32


def test_time_is_channels_times_14_gbps_or_nvlink(a100) -> None:
    eight, two = place_group(a100, 8), place_group(a100, 2)
    t = estimate(CollectiveOp.SEND_RECV, 128 * MiB, eight).time_s
    assert 128 * MiB / t == pytest.approx(8 * 14e9, rel=0.01)
    t = estimate(CollectiveOp.SEND_RECV, 128 * MiB + 1, eight).time_s
    assert 0.0 < t - (128 * MiB + 1) / (16 * 14e9) < LATENCY_S  # faster: NCCL's step
    t = estimate(CollectiveOp.SEND_RECV, 1024**3, eight).time_s
    assert 1024**3 / t == pytest.approx(eight.scale_up_p2p_Bps, rel=0.01)  # 32 x 14 > 240 GB/s NVLink
    t = estimate(CollectiveOp.SEND_RECV, 64 * MiB, two).time_s
    assert 0.0 < t - 64 * MiB / (16 * 14e9) < LATENCY_S  # 224 GB/s, just under NVLink's 240


def test_across_domains_the_nic_stays_the_limit(a100) -> None:
    group = place_group(a100, 2, a100.gpus_per_node)
    assert group.domains == 2 and channel_rule(group, constants()) is None
    t = estimate(CollectiveOp.SEND_RECV, 1024**3, group).time_s
    assert 1024**3 / t == pytest.approx(group.scale_out_Bps, rel=0.01)
