"""How many channels NCCL gives one send/recv, and what that costs (layer L4).

NCCL splits a send (and a recv) over ``nChannels`` channels, one CTA each, and each CTA copies at a
finite rate, so a send/recv inside one scale-up domain moves at most ``nChannels x`` the
per-channel rate, whatever the NVLink bandwidth. The rule, transcribed from NCCL 2.30.7
(NVIDIA/nccl @ 5067397c; the ``p2p`` entry of ``data/nccl_2_30.yaml``):

* ``p2pnChannels = pow2Up(min(comm->nChannels, MAXCHANNELS))`` (src/graph/paths.cc
  ``ncclTopoComputeP2pChannels``), the group's ring/tree channel count standing in for
  ``comm->nChannels`` (:func:`fabricsim.collectives.placement.nccl_channels`);
* ``p2pnChannelsPerPeer = min(p2pnChannels, pow2Up(2 x max(1, path bw / NVLink bw)))`` for an
  NVLink peer, 2 for a PCIe peer (paths.cc ``ncclTopoGetNchannels``; the path bandwidth is the
  group's ``scale_up_p2p_Bps``, i.e. NVLinks x topo.h's per-link figure);
* ``nChannelsMax = p2pnChannelsPerPeer``; ``nChannelsMin`` halves it while
  ``nChannelsMin x nRanks > p2pnChannels`` (src/enqueue.cc ``scheduleP2pTasksToPlan``: "Try to use
  all channels, but one channel per operation");
* per operation (src/enqueue.cc ``addP2pToPlan``, single node): ``stepSize = comm->p2pChunkSize``
  (512 KiB all-NVLink, 128 KiB otherwise, src/init.cc), ``minPartSize = stepSize / 8``,
  ``maxPartSize = 32 x stepSize``; ``nChannels = min(nChannelsMin, ceil(bytes / minPartSize))``,
  then doubled while the part exceeds ``maxPartSize`` and ``nChannels <= nChannelsMax / 2``.

E.g. DGX A100 (12 NVLinks, 24 ring channels): p2pnChannels = p2pnChannelsPerPeer = 32; 8 ranks:
nChannelsMin 4, 8 channels at 128 MiB, 16 from 128 MiB + 1 B, 32 from 256 MiB + 1 B; 2 ranks:
nChannelsMin 16, 32 channels above 256 MiB.

Each channel moves at most NCCL's ``P2P_PER_CHANNEL_NET_BW`` (14 GB/s, src/graph/paths.cc), the
rate NCCL itself assigns one p2p channel. Because the channel count doubles at a size step, time is
not monotone in size there (as in NCCL: 128 MiB + 1 B runs on twice the channels of 128 MiB); it is
monotone between steps, and across a step it drops at most by the ratio of the channel counts.

Scope: inside one scale-up domain (the domain stands for NCCL's node; an MNNVL domain of several
hosts is treated as one node). Across domains NCCL uses the network chunk size (128 KiB parts) and
sizes the per-peer channel count so that channels x 14 GB/s covers the NIC (paths.cc
``ncclTopoGetNchannels``: ``max(netCount, divUp(netBw, 14))``), so the NIC stays the limit for all
but sub-megabyte messages; that case keeps the NIC-only cost (:func:`channel_rule` returns None).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fabricsim.collectives.nccl import NcclConstants
from fabricsim.collectives.placement import Group


def pow2_up(n: int) -> int:
    """Smallest power of two >= n (NCCL's ``pow2Up``), for n >= 1."""
    return 1 << max(0, (n - 1).bit_length())


@dataclass(frozen=True, slots=True)
class ChannelRule:
    """NCCL's per-operation channel choice for one communicator (sizes in bytes)."""

    n_min: int
    n_max: int
    min_part_bytes: int
    max_part_bytes: int

    def channels(self, size_bytes: float) -> int:
        """nChannels of one send of ``size_bytes`` (src/enqueue.cc addP2pToPlan)."""
        if size_bytes <= 0.0:
            return 1
        n = min(self.n_min, math.ceil(size_bytes / self.min_part_bytes))
        part = max(self.min_part_bytes, math.ceil(size_bytes / n))
        while part > self.max_part_bytes and n <= self.n_max // 2:
            n *= 2
            part = math.ceil(size_bytes / n)
        return n


def p2p_channels(group: Group, nccl: NcclConstants) -> int:
    """``comm->p2pnChannels``: the collective channel count, capped at MAXCHANNELS, to a power of 2."""
    return pow2_up(max(1, min(group.channels, nccl.p2p_max_channels)))


def channels_per_peer(group: Group, nccl: NcclConstants) -> int:
    """``comm->p2pnChannelsPerPeer`` inside one domain: 2 per NVLink to the peer (2 for PCIe),
    rounded up to a power of two, at most ``p2pnChannels``."""
    per_peer = nccl.p2p_channels_per_nvlink
    link_Bps = nccl.nvlink_link_Bps.get(group.generation, 0.0)
    if group.intra_hw == "nvlink" and link_Bps > 0.0:
        # NCCL truncates path->bw / nvlBw; the path is n links x nvlBw, so guard float round-off.
        per_peer *= max(1, int(group.scale_up_p2p_Bps / link_Bps + 1e-9))
    return min(p2p_channels(group, nccl), pow2_up(per_peer))


def channel_rule(group: Group, nccl: NcclConstants) -> ChannelRule | None:
    """NCCL's channel rule for a send/recv on ``group``, or None across scale-up domains."""
    if group.domains > 1:
        return None
    n_max = channels_per_peer(group, nccl)
    n_min = n_max
    total = p2p_channels(group, nccl)
    while n_min * group.ranks > total and n_min > 1:
        n_min //= 2
    step = nccl.p2p_chunk_bytes["nvlink" if group.intra_hw == "nvlink" else "pci"]
    return ChannelRule(n_min, n_max, step // nccl.p2p_min_part_divisor, step * nccl.p2p_max_part_multiple)


def send_recv_channels(size_bytes: float, group: Group, nccl: NcclConstants) -> int | None:
    """Channels NCCL runs one send of ``size_bytes`` on over ``group`` (None across domains)."""
    rule = channel_rule(group, nccl)
    return None if rule is None else rule.channels(size_bytes)
