"""Packet-fidelity parameters: switch buffer, ECN, PFC, credits, DCQCN and HPCC (layer L3).

Defaults and their sources (see ``shared/reference/congestion-control.md``):

* DCQCN reaction point: NVIDIA ConnectX firmware defaults (mlxconfig dump; NVIDIA DOCA "DCQCN CC
  Parameters"): RPG_TIME_RESET 300 us, RPG_BYTE_RESET 32,767 B, RPG_THRESHOLD 1,
  RPG_AI_RATE 5 Mb/s, RPG_HAI_RATE 50 Mb/s, RPG_GD 11 (cut = alpha * 1024 / 2^11 = alpha / 2),
  RPG_MIN_DEC_FAC 50 %, RPG_MIN_RATE 1 Mb/s, DCE_TCP_G 1019 (read as alpha <- (1019 alpha +
  5 CNP) / 1024, i.e. g = 5/1024), DCE_TCP_RTT 1 us, RATE_REDUCE_MONITOR_PERIOD 4 us,
  INITIAL_ALPHA_VALUE 1023/1024, MIN_TIME_BETWEEN_CNPS 4 us; RPG_BYTE_RESET read in 64 B units
  (32,767 x 64 B = 2.1 MB; a test generator's DCQCN profile defaults its byte reset to 2 MB);
  CLAMP_TGT_RATE 0 and CLAMP_TGT_RATE_AFTER_TIME_INC 1 (Mellanox community "DCQCN Parameters"
  page; public ``mlxconfig query`` dumps show False(0) / True(1) next to RPG_BYTE_RESET 32767);
  what the flags do is in :mod:`reaction` (the DCQCN authors' ns-3 semantics).
* ECN at the switch: the HPCC repository's DCQCN setting (``simulation/run.py``):
  Kmin = 100 KB x bw/25, Kmax = 400 KB x bw/25 (bw in Gb/s), Pmax = 0.2.
* Switch buffer: HPCC repository, 16 MB x bw/50 per switch (32 MB at 100 Gb/s).
* HPCC: eta = 0.95, maxStage = 5 (Li et al., SIGCOMM'19), AI = 10 Mb/s x bw/25 (HPCC repository).
* PFC: dynamic threshold alpha = 1/8 of the free shared buffer, resume 2 MTU below it [chosen:
  the dynamic-threshold rule of the HPCC repository's switch MMU, with its shift left settable;
  ``pfc_xoff_bytes`` > 0 sets a static Xoff per ingress instead];
  headroom per ingress = 2 x (link latency x rate) + 2 MTU (the pause round trip plus a packet
  in flight at each end).
* Credits: 2 x BDP of the link + 2 MTU per ingress [chosen: enough to keep a link busy]; on a torus
  link as much again for its second virtual channel (kernel docstring, :mod:`vc`) [assumed: a buffer
  per VC, as InfiniBand advertises credits per VL; how a switch splits its memory is its vendor's].
* MTU 4,096 B (RoCE and InfiniBand's common MTU); rto 100 us [chosen; lossy mode only].
* Loss recovery (:mod:`recovery`): ``loss_recovery`` go-back-n (0, RoCE NICs' default: Mittal et
  al., IRN, SIGCOMM'18) or selective (1); ``trimming`` 0/1 (NDP, SIGCOMM'17; UEC 1.0 packet
  trimming), a trimmed packet ``trim_bytes`` = 64 B [chosen: of the order of the Ethernet + IP +
  UDP + transport headers a trimmed packet keeps].
* The link layer (:data:`FEC_LATENCY_S`): ``fec_lane_gbps`` 0 (off, the default), 50, 100 or 200
  adds the RS(544,514) FEC latency of that SerDes generation to every hop; ``ber`` (0 by default)
  is the bit-error rate left after FEC on every link: a packet of b bits is lost with probability
  1 - (1 - BER)^b (seeded), and the transport recovers it. No link-level retry: InfiniBand's Link
  Level Retransmission is an NVIDIA-proprietary option for NVIDIA-to-NVIDIA links up to 30 m (NVIDIA
  MLNX-OS User Manual, "UNBREAKABLE-LINK"), not part of the InfiniBand or Ethernet standards.
  ``ber_edge`` / ``ber_fabric`` override ``ber`` on the host <-> switch links and on the links
  between switches (e.g. copper DACs to the NICs, optics between switches); unset, they are ``ber``.
* Headers (:data:`HEADERS`): every data packet carries ``header_bytes`` of protocol headers and
  trailers besides its MTU of payload (they cross the links and sit in the buffers), and takes
  ``gap_bytes`` more of line time (Ethernet's preamble, SFD and inter-frame gap), so payload
  goodput is below line rate. Unset, both come from the transport family of (cc, lossless):
  credits = InfiniBand, NSCC = Ultra Ethernet, anything else = RoCEv2 on Ethernet.
* Drop-tail per queue (lossy mode): ``queue_bytes`` > 0 caps every switch egress queue; a packet
  that would take one above it is dropped (or trimmed), as when the shared pool is full [a switch
  setting: 0, no cap, by default; e.g. htsim's EQDS runs use 35-packet queues].
* Control packets (``control_packets`` 1; :data:`CONTROL`): ACKs, NACKs and CNPs of ``ack_bytes`` /
  ``cnp_bytes`` cross the reverse path through the queues (kernel docstring); ``ack_every``
  delivered packets of a flow make one plain ACK where the CC reads no per-packet feedback (1 [assumed:
  htsim's RoCE sink, sim/roce.cpp RoceSink::receivePacket, ACKs every packet; the IBTA lets a
  responder coalesce ACKs and names no count]); HPCC and NSCC ACK every packet (their INT / delay
  samples). A CNP is sent at most once per ``cnp_interval_s`` per flow (ConnectX's 4 us, above).
* Traffic classes (``classes`` N, 1 by default: one FIFO per egress, as before): every switch egress
  keeps one data FIFO per class (under the shared buffer; control packets stay ahead of all of them);
  ``class_sched`` strict (class 0 first) or wrr (deficit round robin, ``class_weights`` w0,w1,...:
  quanta in that ratio, each at least a full frame; default all equal). PFC is per priority (IEEE
  802.1Qbb): an ingress counts its bytes per class against the XOFF threshold and pauses only that
  class upstream, each lossless class with its own headroom (reserved per ingress and lossless
  class); ``class_lossless`` 1,0,... makes a class lossy under ``--lossless pfc`` (dropped when the
  buffer or its ``class_queue_bytes`` cap is full, never paused; default every class as ``--lossless``
  says, every cap ``queue_bytes``). A flow's class: 0 for the job's flows, ``background_class`` for
  the flows of infinite size (a background tenant's). NICs keep per-flow round robin, skip the flows
  of a paused class and, under strict priority, send a class only when no higher one can. Credits
  (``--lossless credit``) take one class only [not modelled: per-VL credits for QoS; VCs serve tori only].

Every field can be overridden by name (``--cc-param NAME=VALUE``); rates are bytes/s, times s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from enum import StrEnum

import numpy as np

from fabricsim.errors import FabricsimError, did_you_mean, parse_choice
from fabricsim.network.packet import layout as L  # noqa: N812 (the column-name table)
from fabricsim.network.packet.kernel import HIST_BINS


class CongestionControl(StrEnum):
    NONE = "none"
    DCQCN = "dcqcn"
    HPCC = "hpcc"
    NSCC = "nscc"


class Lossless(StrEnum):
    NONE = "none"
    PFC = "pfc"
    CREDIT = "credit"


def parse_cc(name: str) -> CongestionControl:
    return parse_choice("cc", name, CongestionControl)


def parse_lossless(name: str) -> Lossless:
    return parse_choice("lossless", name, Lossless)


_MBPS = 1e6 / 8  # 1 Mb/s in bytes/s

# RS(544,514) "KP4" FEC latency per hop by SerDes lane rate (Gb/s of payload per lane), derived: the
# decoder holds a whole codeword (544 symbols x 10 bits = 5,440 bits; IEEE 802.3 Clause 91, Intel
# AN 846 "100GBASE-KP4") before it can correct it, and its pipeline takes about as long again
# [chosen: one more codeword time]; lanes signal at 53.125 (50G, 802.3cd), 106.25 (100G, 802.3ck)
# and 212.5 Gb/s (200G, 802.3dj). At 100G lanes that is 102.4 ns, the ~100 ns per hop usually quoted.
MAX_ENTROPIES = 65536  # UET's entropy value is a 16-bit field
# highest post-FEC bit-error rate taken: a 4,096 B packet is then lost on 28% of its hops; above it a
# link is down rather than noisy (post-FEC targets are ~1e-12 or better: Intel AN 846, KP4's "BER of
# 1e-12 or better after FEC"), and retransmissions grow without bound
MAX_BER = 1e-5
KP4_CODEWORD_BITS = 5440
LANE_SIGNAL_BPS = {50: 53.125e9, 100: 106.25e9, 200: 212.5e9}
FEC_LATENCY_S = {gbps: 2 * KP4_CODEWORD_BITS / bps for gbps, bps in LANE_SIGNAL_BPS.items()}

# Per-packet overhead of a data packet, bytes: (headers + trailers in the frame, line time outside it).
# Ethernet framing (IEEE 802.3-2022 clause 3.1.1 and 4.4.2): MAC header 14 (two addresses + EtherType),
# FCS 4; preamble 7 + SFD 1 and the minimum inter-packet gap of 12 byte times are on the wire, not in
# the frame. IPv4 header 20 (RFC 791, no options); UDP 8 (RFC 768).
# RoCEv2 (IBTA Architecture Specification Vol. 1 Annex A17 "RoCEv2"): IB BTH 12 + ICRC 4 over UDP
# port 4791 -> 14 + 20 + 8 + 12 + 4 + 4 = 62 B, + 20 on the wire. The RETH (16 B) of an RDMA WRITE's
# first packet is not counted (one packet per message).
# InfiniBand (IBTA Vol. 1 ch. 7.7-7.8 "Local Route Header", 9.2 "Base Transport Header", 7.8
# "Invariant CRC", "Variant CRC"): LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B; the link's start/end
# delimiters and idles between packets: 0 [assumed: a few symbols, not specified as bytes].
# Ultra Ethernet over UDP port 4793 (UEC 1.0 specification, PDS and SES header formats, as laid out in
# xdp2-dev/xdp2 src/include/uet/pds.h and ses.h @ 3d3d6a318dbb221d3060083c36f11c5eeae0677e): RUD request
# PDS header 12 (prologue 2, clear PSN offset 2, PSN 4, SPDCID 2, DPDCID 2) + SES standard request
# header 44 (common 12, buffer offset 8, initiator 4, memory key / match bits 8, header data 8,
# request length 4) -> 14 + 20 + 8 + 12 + 44 + 4 = 102 B, + 20 on the wire.
ETHERNET_GAP_BYTES = 8 + 12
HEADERS = {"roce": (62.0, ETHERNET_GAP_BYTES), "infiniband": (26.0, 0.0), "uet": (102.0, ETHERNET_GAP_BYTES)}
# Control frames, bytes (frame, without the gap): (ACK or NACK, CNP). RoCEv2: Ethernet 14 + IPv4 20 + UDP 8
# + BTH 12 + AETH 4 (ACK/NAK extended transport header, IBTA Vol. 1 9.3.5) + ICRC 4 + FCS 4 = 66; its CNP
# carries 16 reserved bytes after the BTH instead (IBTA Annex A17.9.3): 14 + 20 + 8 + 12 + 16 + 4 + 4 = 78.
# InfiniBand: LRH 8 + BTH 12 + AETH 4 + ICRC 4 + VCRC 2 = 30 (a CNP the same [assumed]). Ultra Ethernet:
# 14 + 20 + 8 + PDS ACK_CC 32 (ACK 12 + CC type, MPR, SACK offset 4 + SACK bitmap 8 + CC state 8:
# xdp2 uet/pds.h above) + 4 = 78 (a NACK the same [assumed]; NSCC needs no CNP).
CONTROL = {"roce": (66.0, 78.0), "infiniband": (30.0, 30.0), "uet": (78.0, 78.0)}
MAX_HEADER_BYTES = 1024  # headers, not a packet (the largest above is 102 B)


@dataclass(frozen=True, slots=True)
class PacketParams:
    """All tunables of the packet fidelity. ``None`` means: derive from the line rate (see module doc)."""

    mtu_bytes: float = 4096.0
    buffer_bytes: float | None = None
    kmin_bytes: float | None = None
    kmax_bytes: float | None = None
    pmax: float = 0.2
    pfc_alpha: float = 0.125
    pfc_xoff_bytes: float = 0.0
    pfc_resume_bytes: float | None = None
    credit_bytes: float | None = None
    rto_s: float = 100e-6
    rate_limit_Bps: float = 0.0
    loss_recovery: float = 0.0  # 0 go-back-N (RoCE NICs' default), 1 selective repeat
    trimming: float = 0.0  # 1: a full switch trims a packet to its headers instead of dropping it
    trim_bytes: float = 64.0
    fec_lane_gbps: float = 0.0  # 0: no FEC latency; 50 | 100 | 200: RS(544,514) at that lane rate per hop
    ber: float = 0.0  # post-FEC bit-error rate of every link
    ber_edge: float | None = None  # ... of the host <-> switch links (None: ber)
    ber_fabric: float | None = None  # ... of the links between switches (None: ber)
    header_bytes: float | None = None  # headers + trailers per data packet (None: from the transport, HEADERS)
    gap_bytes: float | None = None  # line time per packet outside the frame, bytes (None: from the transport)
    control_packets: float = 1.0  # 1: ACK/NACK/CNP are packets in the queues; 0: feedback after the path latency
    ack_bytes: float | None = None  # an ACK's / NACK's frame (None: from the transport, CONTROL)
    cnp_bytes: float | None = None  # a CNP's frame (None: from the transport)
    ack_every: float = 1.0  # delivered packets per plain ACK (no CC feedback), per flow
    queue_bytes: float = 0.0  # lossy mode: drop-tail (or trim) limit of each switch egress queue (0: none)
    entropies: float = 0.0  # spraying: entropy values per flow, hashed per switch (0: round robin)
    classes: float = 1.0  # traffic classes of data packets (one FIFO each per egress; module doc)
    class_sched: float = 0.0  # between classes: 0 strict priority (class 0 highest), 1 deficit round robin
    class_weights: tuple[float, ...] | None = None  # DWRR weight per class (None: all equal)
    class_lossless: tuple[float, ...] | None = None  # 1/0 per class under --lossless pfc (None: all 1)
    class_queue_bytes: tuple[float, ...] | None = None  # drop-tail cap per lossy class (None: queue_bytes)
    background_class: float = 0.0  # the class of the flows of infinite size (a background tenant's)
    # NSCC (Ultra Ethernet; see reaction.py) [chosen: target delay half the base RTT, window cap 1.5 BDP]
    nscc_target: float = 0.5
    nscc_max_window: float = 1.5
    rccc: float = 0.0  # 1: receiver credits (UEC RCCC, simplified; see credit.py)
    # DCQCN (NVIDIA ConnectX defaults)
    cnp_interval_s: float = 4e-6
    rate_reduce_period_s: float = 4e-6
    alpha_period_s: float = 1e-6
    g: float = 5.0 / 1024.0
    gd_factor: float = 0.5
    min_dec_factor: float = 0.5
    min_rate_Bps: float = 1.0 * _MBPS
    timer_s: float = 300e-6
    byte_reset_bytes: float = 32767.0 * 64  # RPG_BYTE_RESET 32,767 in 64 B units (about 2 MB)
    fast_recovery_steps: float = 1.0
    rai_Bps: float = 5.0 * _MBPS
    rhai_Bps: float = 50.0 * _MBPS
    alpha_initial: float = 1023.0 / 1024.0
    clamp_target: float = 0.0
    clamp_target_after_timer: float = 1.0
    # HPCC
    eta: float = 0.95
    max_stage: float = 5.0
    hpcc_ai_Bps: float | None = None

    def with_overrides(self, overrides: dict[str, float]) -> PacketParams:
        """A copy with named fields replaced; unknown names and bad values raise FabricsimError."""
        known = {f.name for f in fields(self)}
        for name, value in overrides.items():
            if name not in known:
                raise FabricsimError("cc-param", f"unknown parameter {name!r}", did_you_mean(name, known))
            _check(name, value)
        return replace(self, **overrides)


# keys that take one of a few values, named on the command line (--cc-param loss_recovery=selective)
_CHOICES: dict[str, dict[str, float]] = {
    "loss_recovery": {"go-back-n": 0.0, "selective": 1.0},
    "trimming": {"0": 0.0, "1": 1.0},
    "rccc": {"0": 0.0, "1": 1.0},
    "control_packets": {"0": 0.0, "1": 1.0},
    "fec_lane_gbps": {"0": 0.0, "50": 50.0, "100": 100.0, "200": 200.0},
    "class_sched": {"strict": 0.0, "wrr": 1.0},
}
# keys that take one value per traffic class, comma-separated (--cc-param class_weights=3,1); RULES
# checks each value
_LISTS = {"class_weights": "3,1", "class_lossless": "1,0", "class_queue_bytes": "0,65536"}


class Kind(StrEnum):
    """What values a parameter takes: any real, a whole number, or an on/off flag (0 or 1)."""

    REAL = "a number"
    INTEGER = "a whole number"
    FLAG = "0 or 1"


@dataclass(frozen=True, slots=True)
class Rule:
    """The values a :class:`PacketParams` field accepts: ``kind`` in [``low``, ``high``], ``low``
    excluded when ``open_low`` (a zero rate or size would stall the kernel), or 0 when ``or_zero``."""

    kind: Kind
    low: float
    high: float
    open_low: bool = False
    or_zero: bool = False  # 0 is accepted too (it means "off")

    def refuse(self, name: str, value: float) -> str | None:
        """Why ``value`` is not acceptable for ``name``, or None."""
        if not math.isfinite(value):
            return f"{name} must be a finite number, got {value!r}"
        if self.kind != Kind.REAL and value != int(value):
            return f"{name} must be {self.kind.value}, got {value!r}"
        if self.kind == Kind.FLAG and value not in (0.0, 1.0):
            return f"{name} must be 0 or 1, got {value!r}"
        if self.or_zero and value == 0.0:
            return None
        low_ok = value > self.low if self.open_low else value >= self.low
        if not low_ok or value > self.high:
            left = "(" if self.open_low else "["
            also = "0 or " if self.or_zero else ""
            return f"{name} must be {also}in {left}{self.low:g}, {self.high:g}], got {value!r}"
        return None


MIN_MTU_BYTES = 64  # the smallest Ethernet frame (IEEE 802.3); InfiniBand's smallest MTU is 256 B
MAX_MTU_BYTES = 9216  # the largest jumbo frame Ethernet switches take (IB: 4,096 B)
MAX_BYTES = float(2**50)  # 1 PiB, the SIZE_BYTES cap: byte counts stay exact and credit counts fit int64
_INF = math.inf
_FRACTION = Rule(Kind.REAL, 0.0, 1.0)
_BYTES = Rule(Kind.REAL, 0.0, MAX_BYTES)
_POSITIVE_BYTES = Rule(Kind.REAL, 0.0, MAX_BYTES, open_low=True)
_RATE = Rule(Kind.REAL, 0.0, _INF)
# shortest timer period: the NIC firmware sets its DCQCN periods in whole microseconds (NVIDIA DOCA
# "DCQCN CC Parameters"); a shorter one only multiplies the kernel's timer events (1e-12 s: 10^12 wake-ups
# per simulated second, a run that never ends)
MIN_PERIOD_S = 1e-6
_PERIOD = Rule(Kind.REAL, MIN_PERIOD_S, _INF)
# slowest sending rate: RPG_MIN_RATE, 1 Mb/s, the floor the NIC firmware itself keeps (module doc); a
# slower flow spends simulated hours, and the kernel wakes its sender every timer period meanwhile
MIN_RATE_BPS = 1.0 * _MBPS

RULES: dict[str, Rule] = {
    "mtu_bytes": Rule(Kind.INTEGER, MIN_MTU_BYTES, MAX_MTU_BYTES),
    "buffer_bytes": _POSITIVE_BYTES,
    "kmin_bytes": _BYTES,
    "kmax_bytes": _BYTES,
    "pmax": _FRACTION,
    "pfc_alpha": Rule(Kind.REAL, 0.0, 1.0, open_low=True),  # 0 would pause every ingress for good
    "pfc_xoff_bytes": _BYTES,  # 0: the dynamic threshold; else checked against the buffer per switch
    "pfc_resume_bytes": _BYTES,
    "credit_bytes": _POSITIVE_BYTES,
    "rto_s": _PERIOD,
    "rate_limit_Bps": Rule(Kind.REAL, MIN_RATE_BPS, _INF, or_zero=True),  # 0: no limit
    "cnp_interval_s": Rule(Kind.REAL, 0.0, _INF),
    "rate_reduce_period_s": _PERIOD,
    "alpha_period_s": _PERIOD,
    "g": _FRACTION,
    "gd_factor": _FRACTION,
    "min_dec_factor": _FRACTION,
    "min_rate_Bps": Rule(Kind.REAL, MIN_RATE_BPS, _INF),
    "timer_s": _PERIOD,
    "byte_reset_bytes": _POSITIVE_BYTES,
    "fast_recovery_steps": Rule(Kind.INTEGER, 0, 2**31),
    "rai_Bps": _RATE,
    "rhai_Bps": _RATE,
    "alpha_initial": _FRACTION,
    "clamp_target": Rule(Kind.FLAG, 0, 1),
    "clamp_target_after_timer": Rule(Kind.FLAG, 0, 1),
    "eta": Rule(Kind.REAL, 0.0, 1.0, open_low=True),  # a zero target utilisation closes the window
    "max_stage": Rule(Kind.INTEGER, 0, 2**31),
    "hpcc_ai_Bps": _RATE,
    # loss recovery, trimming, the link layer, UET (named values of _CHOICES are checked first)
    "loss_recovery": Rule(Kind.FLAG, 0, 1),  # 0 go-back-N, 1 selective repeat
    "trimming": Rule(Kind.FLAG, 0, 1),
    "trim_bytes": Rule(Kind.INTEGER, 1, 4096),  # a header, not a packet
    "fec_lane_gbps": Rule(Kind.INTEGER, 0, 200),
    "ber": Rule(Kind.REAL, 0.0, MAX_BER),
    "ber_edge": Rule(Kind.REAL, 0.0, MAX_BER),
    "ber_fabric": Rule(Kind.REAL, 0.0, MAX_BER),
    "header_bytes": Rule(Kind.INTEGER, 0, MAX_HEADER_BYTES),
    "gap_bytes": Rule(Kind.INTEGER, 0, MAX_HEADER_BYTES),
    "control_packets": Rule(Kind.FLAG, 0, 1),
    "ack_bytes": Rule(Kind.INTEGER, MIN_MTU_BYTES, MAX_HEADER_BYTES),
    "cnp_bytes": Rule(Kind.INTEGER, MIN_MTU_BYTES, MAX_HEADER_BYTES),
    "ack_every": Rule(Kind.INTEGER, 1, 2**20),
    "queue_bytes": Rule(Kind.REAL, MIN_MTU_BYTES, MAX_BYTES, or_zero=True),
    "entropies": Rule(Kind.INTEGER, 0, MAX_ENTROPIES),
    "nscc_target": Rule(Kind.REAL, 0.0, 10.0, open_low=True),  # in base RTTs
    "nscc_max_window": Rule(Kind.REAL, 0.0, _INF, open_low=True),  # in BDPs
    "rccc": Rule(Kind.FLAG, 0, 1),
    "classes": Rule(Kind.INTEGER, 1, L.MAX_CLASSES),
    "class_sched": Rule(Kind.FLAG, 0, 1),  # 0 strict, 1 wrr (named in _CHOICES)
    "class_weights": Rule(Kind.REAL, 0.0, 1e6, open_low=True),  # per class; quanta in this ratio
    "class_lossless": Rule(Kind.FLAG, 0, 1),  # per class
    "class_queue_bytes": Rule(Kind.REAL, MIN_MTU_BYTES, MAX_BYTES, or_zero=True),  # per class
    "background_class": Rule(Kind.INTEGER, 0, L.MAX_CLASSES - 1),
}
"""Every ``--cc-param`` key and the values it accepts (a test checks that it covers every field)."""
_UNLISTED = Rule(Kind.REAL, 0.0, _INF)  # a field without a rule yet: finite and >= 0 (the test flags it)


def _check(name: str, value) -> None:
    if name in _LISTS:
        if not isinstance(value, tuple) or not 1 <= len(value) <= L.MAX_CLASSES:
            raise FabricsimError("cc-param", f"{name} takes 1 to {L.MAX_CLASSES} comma-separated values, one per class",
                                 f"e.g. --cc-param {name}={_LISTS[name]}")  # fmt: skip
        for item in value:
            _check_one(name, item)
        return
    _check_one(name, value)


def _check_one(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FabricsimError("cc-param", f"{name} must be a number, got {value!r}")
    if name in _CHOICES and value not in _CHOICES[name].values():
        raise FabricsimError("cc-param", f"{name} must be one of {' | '.join(_CHOICES[name])}, got {value:g}")
    problem = RULES.get(name, _UNLISTED).refuse(name, float(value))
    if problem is not None:
        raise FabricsimError("cc-param", problem, f"e.g. --cc-param {name}={_example(name)}")


def _example(name: str) -> str:
    if name in _LISTS:
        return _LISTS[name]
    default = getattr(PacketParams(), name)
    if default is None and RULES.get(name) is not None and RULES[name].high <= MAX_HEADER_BYTES:
        return f"{RULES[name].low:g}"  # a size in bytes or a bit-error rate: the lowest value
    return f"{default:g}" if default is not None else "1e6"


def parse_cc_params(items: list[str] | tuple[str, ...]) -> dict[str, float | tuple[float, ...]]:
    """``["NAME=VALUE", ...]`` -> {name: float}, or {name: (float, ...)} for a per-class list
    (``class_weights=3,1``); dashes in names become underscores."""
    out: dict[str, float | tuple[float, ...]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep:
            raise FabricsimError("cc-param", f"{item!r} is not NAME=VALUE", "e.g. --cc-param timer_s=1.2e-3")
        key = name.strip().replace("-", "_")
        if key in _LISTS:
            out[key] = _parse_list(key, text)
            continue
        if text.strip() in _CHOICES.get(key, {}):
            out[key] = _CHOICES[key][text.strip()]
            continue
        try:
            value = float(text)
        except ValueError:
            if key in _CHOICES:  # a named value (its number is accepted too, and checked)
                raise FabricsimError(
                    "cc-param", f"{key} must be one of {' | '.join(_CHOICES[key])}, got {text.strip()!r}"
                ) from None
            raise FabricsimError("cc-param", f"{name.strip()} must be a number, got {text.strip()!r}") from None
        out[name.strip().replace("-", "_")] = value
    return out


def _parse_list(key: str, text: str) -> tuple[float, ...]:
    """``"3,1"`` -> (3.0, 1.0) for a per-class key (values checked by with_overrides)."""
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise FabricsimError("cc-param", f"{key} must be comma-separated numbers, one per class, got {text.strip()!r}",
                             f"e.g. --cc-param {key}={_LISTS[key]}") from None  # fmt: skip


def check_classes(p: PacketParams, lossless: Lossless) -> None:
    """Checks of the traffic-class keys together: one value per class in each list, a background
    class that exists, and one class only with credits (per-VL credits are not modelled)."""
    n = int(p.classes)
    for name in _LISTS:
        value = getattr(p, name)
        if value is not None and len(value) != n:
            raise FabricsimError("cc-param", f"{name} has {len(value)} values for classes={n}",
                                 f"give one value per class, or set classes={len(value)}")  # fmt: skip
    if p.background_class >= n:
        k = int(p.background_class)
        raise FabricsimError("cc-param", f"background_class={k} needs classes > {k}", f"set classes={k + 1} or more")
    if n > 1 and lossless == Lossless.CREDIT:
        raise FabricsimError("cc-param", f"classes={n} needs --lossless pfc or none (credits take one class here)",
                             "use --lossless pfc, or classes=1")  # fmt: skip
    if p.class_lossless is not None and lossless != Lossless.PFC and any(p.class_lossless):
        raise FabricsimError("cc-param", "class_lossless=1 for a class needs --lossless pfc",
                             "use --lossless pfc, or class_lossless=0 for every class")  # fmt: skip


def lossless_classes(p: PacketParams) -> int:
    """Traffic classes that PFC keeps lossless (each has its own headroom at every ingress)."""
    return int(p.classes) if p.class_lossless is None else int(sum(p.class_lossless))


def resolved(params: PacketParams, line_Bps: float) -> PacketParams:
    """Fill the line-rate-dependent defaults (HPCC repository rules, bw = line rate in Gb/s)."""
    bw = line_Bps * 8 / 1e9
    out = replace(
        params,
        buffer_bytes=params.buffer_bytes if params.buffer_bytes is not None else 16e6 * bw / 50,
        kmin_bytes=params.kmin_bytes if params.kmin_bytes is not None else 100e3 * bw / 25,
        kmax_bytes=params.kmax_bytes if params.kmax_bytes is not None else 400e3 * bw / 25,
        pfc_resume_bytes=params.pfc_resume_bytes if params.pfc_resume_bytes is not None else 2 * params.mtu_bytes,
        hpcc_ai_Bps=params.hpcc_ai_Bps if params.hpcc_ai_Bps is not None else 10 * _MBPS * bw / 25,
    )
    _check_together(out)
    return out


def _check_together(p: PacketParams) -> None:
    """Checks across fields: ECN's Kmin <= Kmax, and a buffer that holds one packet (a smaller one
    drops every packet, and the sender retransmits for ever)."""
    if p.kmin_bytes > p.kmax_bytes:
        raise FabricsimError("cc-param", f"kmin_bytes ({p.kmin_bytes:g}) exceeds kmax_bytes ({p.kmax_bytes:g})",
                             "set kmin_bytes <= kmax_bytes")  # fmt: skip
    if p.buffer_bytes < p.mtu_bytes:
        raise FabricsimError("buffer", f"{p.buffer_bytes:g} B cannot hold one {p.mtu_bytes:g} B packet",
                             f"use --buffer of at least {p.mtu_bytes:g} (one MTU)")  # fmt: skip


def check_static_xoff(p: PacketParams, ingress_ports: np.ndarray, pool_bytes: np.ndarray) -> None:
    """Refuse a static PFC Xoff (``pfc_xoff_bytes`` > 0) that lets a switch's shared buffer overflow.

    An ingress is paused once it holds more than Xoff in the shared pool, so it can hold up to
    Xoff + one MTU there (the packet that crossed the threshold); every ingress of a switch at once
    must fit in its pool (buffer less the PFC headroom reserved per ingress). ``ingress_ports`` and
    ``pool_bytes`` are per switch. A larger Xoff overflowed the buffer silently (issue 26)."""
    if p.pfc_xoff_bytes <= 0 or ingress_ports.size == 0:
        return
    need = ingress_ports * (p.pfc_xoff_bytes + p.mtu_bytes)
    worst = int(np.argmax(need - pool_bytes))
    if need[worst] > pool_bytes[worst]:
        fits = max(pool_bytes[worst] / ingress_ports[worst] - p.mtu_bytes, 0.0)
        raise FabricsimError(
            "cc-param",
            f"pfc_xoff_bytes={p.pfc_xoff_bytes:g} overflows a switch buffer: {int(ingress_ports[worst])} ingress "
            f"ports x (Xoff + one MTU) = {need[worst]:.0f} B > {pool_bytes[worst]:.0f} B of shared buffer",
            f"use pfc_xoff_bytes <= {fits:.0f}, a larger --buffer, or pfc_xoff_bytes=0 (dynamic threshold)",
        )


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What to simulate with the params: CC, lossless mode, line rate, sampling and seed."""

    cc: CongestionControl
    lossless: Lossless
    line_Bps: float
    sample_dt_s: float
    seed: int


def link_ber(params: PacketParams, link_class: np.ndarray) -> np.ndarray:
    """Each link's post-FEC bit-error rate: ``ber_edge`` on host <-> switch links (classes 0 and 1),
    ``ber_fabric`` between switches (class 2), ``ber`` where they are unset."""
    edge = params.ber if params.ber_edge is None else params.ber_edge
    fabric = params.ber if params.ber_fabric is None else params.ber_fabric
    return np.where(link_class == 2, fabric, edge).astype(float)


def wire_overhead(params: PacketParams, cc: CongestionControl, lossless: Lossless) -> tuple[float, float]:
    """(header bytes, gap bytes) of every data packet: ``header_bytes`` / ``gap_bytes``, or where
    unset the :data:`HEADERS` of the transport family (cc, lossless) runs: credits -> InfiniBand,
    NSCC -> Ultra Ethernet, else RoCEv2 on Ethernet."""
    header, gap = HEADERS[_family(cc, lossless)]
    return (header if params.header_bytes is None else params.header_bytes,
            gap if params.gap_bytes is None else params.gap_bytes)  # fmt: skip


def control_bytes(params: PacketParams, cc: CongestionControl, lossless: Lossless) -> tuple[float, float]:
    """(ACK, CNP) frame bytes: ``ack_bytes`` / ``cnp_bytes``, or the transport family's :data:`CONTROL`."""
    ack, cnp = CONTROL[_family(cc, lossless)]
    return (ack if params.ack_bytes is None else params.ack_bytes,
            cnp if params.cnp_bytes is None else params.cnp_bytes)  # fmt: skip


def _family(cc: CongestionControl, lossless: Lossless) -> str:
    """The transport family whose headers a run uses: credits -> InfiniBand, NSCC -> UET, else RoCEv2."""
    if lossless == Lossless.CREDIT:
        return "infiniband"
    return "uet" if cc == CongestionControl.NSCC else "roce"


def fec_latency_s(params: PacketParams) -> float:
    """The FEC latency each hop adds (s): :data:`FEC_LATENCY_S` of ``fec_lane_gbps``, 0 when off."""
    return FEC_LATENCY_S.get(int(params.fec_lane_gbps), 0.0)


def hist_bin_bytes(p: PacketParams) -> float:
    """Width (bytes) of a bin of the kernel's queue-length histogram (``HIST_BINS`` bins) for the
    resolved params ``p``: one MTU, or wider so that the bins cover the whole switch buffer. With
    MTU bins alone the histogram ended at 4,096 x 4,096 B = 16,777,216 B, and every queue p99 above
    that read 16,777,216 B (issue 26); a queue above the buffer (credits buffer per port, not in the
    shared pool) lands in the last bin, and a percentile there reads the largest queue seen."""
    return max(p.mtu_bytes, math.ceil(p.buffer_bytes / HIST_BINS))


def kernel_vector(params: PacketParams, opts: RunOptions) -> np.ndarray:
    """The kernel's parameter vector ``P`` (indices in :mod:`layout`)."""
    p = resolved(params, opts.line_Bps)
    P = np.zeros(L.P_COLS)
    P[L.P_MTU] = p.mtu_bytes
    P[L.P_LOSSLESS] = {Lossless.NONE: 0, Lossless.PFC: 1, Lossless.CREDIT: 2}[opts.lossless]
    P[L.P_CC] = {CongestionControl.NONE: 0, CongestionControl.DCQCN: 1, CongestionControl.HPCC: 2,
                 CongestionControl.NSCC: 3}[opts.cc]  # fmt: skip
    P[L.P_LINE] = opts.line_Bps
    P[L.P_KMIN], P[L.P_KMAX], P[L.P_PMAX] = p.kmin_bytes, p.kmax_bytes, p.pmax
    P[L.P_PFC_ALPHA], P[L.P_PFC_RESUME], P[L.P_RTO] = p.pfc_alpha, p.pfc_resume_bytes, p.rto_s
    P[L.P_CNP_INTERVAL], P[L.P_RRMP], P[L.P_ALPHA_PERIOD] = p.cnp_interval_s, p.rate_reduce_period_s, p.alpha_period_s
    P[L.P_G], P[L.P_GD_FACTOR], P[L.P_MIN_DEC] = p.g, p.gd_factor, p.min_dec_factor
    P[L.P_MIN_RATE], P[L.P_TIMER], P[L.P_BYTE_RESET] = p.min_rate_Bps, p.timer_s, p.byte_reset_bytes
    P[L.P_F], P[L.P_RAI], P[L.P_RHAI] = p.fast_recovery_steps, p.rai_Bps, p.rhai_Bps
    P[L.P_ALPHA0], P[L.P_ETA], P[L.P_MAX_STAGE] = p.alpha_initial, p.eta, p.max_stage
    P[L.P_HPCC_WAI], P[L.P_RATE_LIMIT] = p.hpcc_ai_Bps, p.rate_limit_Bps
    P[L.P_CLAMP], P[L.P_CLAMP_ATI] = p.clamp_target, p.clamp_target_after_timer
    P[L.P_PFC_XOFF] = p.pfc_xoff_bytes
    P[L.P_HIST_BIN] = hist_bin_bytes(p)
    P[L.P_LOSS_RECOVERY], P[L.P_TRIM], P[L.P_TRIM_BYTES] = p.loss_recovery, p.trimming, p.trim_bytes
    P[L.P_BER], P[L.P_ENTROPIES] = p.ber, p.entropies
    P[L.P_NSCC_TARGET], P[L.P_NSCC_MAXWIN] = p.nscc_target, p.nscc_max_window
    P[L.P_RCCC] = p.rccc
    P[L.P_HEADER], P[L.P_GAP] = wire_overhead(p, opts.cc, opts.lossless)
    P[L.P_CONTROL], P[L.P_ACK_EVERY] = p.control_packets, p.ack_every
    P[L.P_QUEUE_LIMIT] = p.queue_bytes
    n = int(p.classes)
    weights = np.asarray(p.class_weights or (1.0,) * n)
    P[L.P_CLASSES], P[L.P_CLASS_SCHED] = n, p.class_sched
    P[L.P_CLASS_QUANTUM : L.P_CLASS_QUANTUM + n] = weights / weights.min() * (p.mtu_bytes + P[L.P_HEADER])
    P[L.P_CLASS_LOSSY : L.P_CLASS_LOSSY + n] = 1.0 - np.asarray(p.class_lossless or (1.0,) * n)
    P[L.P_CLASS_QCAP : L.P_CLASS_QCAP + n] = p.class_queue_bytes or (p.queue_bytes,) * n
    P[L.P_ACK_BYTES], P[L.P_CNP_BYTES] = control_bytes(p, opts.cc, opts.lossless)
    P[L.P_SAMPLE_DT], P[L.P_SEED] = opts.sample_dt_s, float(opts.seed % (2**31))
    return P
