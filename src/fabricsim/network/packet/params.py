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
* Credits: 2 x BDP of the link + 2 MTU per ingress [chosen: enough to keep a link busy].
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

Every field can be overridden by name (``--cc-param NAME=VALUE``); rates are bytes/s, times s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from enum import StrEnum

import numpy as np

from fabricsim.errors import FabricsimError, did_you_mean, parse_choice
from fabricsim.network.packet import layout as L  # noqa: N812 (the column-name table)


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
    entropies: float = 0.0  # spraying: entropy values per flow, hashed per switch (0: round robin)
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
    "fec_lane_gbps": {"0": 0.0, "50": 50.0, "100": 100.0, "200": 200.0},
}

_FRACTIONS = {
    "clamp_target",
    "clamp_target_after_timer",
    "pmax",
    "pfc_alpha",
    "g",
    "gd_factor",
    "min_dec_factor",
    "alpha_initial",
    "eta",
}


def _check(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FabricsimError("cc-param", f"{name} must be a finite number, got {value!r}")
    if name in _CHOICES and value not in _CHOICES[name].values():
        raise FabricsimError("cc-param", f"{name} must be one of {' | '.join(_CHOICES[name])}, got {value:g}")
    if name == "entropies" and (value != int(value) or value > MAX_ENTROPIES):
        raise FabricsimError("cc-param", f"entropies must be a whole number in [0, {MAX_ENTROPIES}], got {value:g}")
    if name in ("nscc_target", "nscc_max_window") and value <= 0:
        raise FabricsimError("cc-param", f"{name} must be > 0, got {value:g}")
    if name == "ber" and not 0.0 <= value <= MAX_BER:
        raise FabricsimError("cc-param", f"ber must be in [0, {MAX_BER:g}], got {value:g}", "e.g. --ber 1e-12")
    if name == "trim_bytes" and not 1 <= value <= 4096:
        raise FabricsimError("cc-param", f"trim_bytes must be in [1, 4096] (a header), got {value:g}")
    if name in _FRACTIONS and not 0.0 <= value <= 1.0:
        raise FabricsimError("cc-param", f"{name} must be in [0, 1], got {value}")
    if name not in _FRACTIONS and value < 0:
        raise FabricsimError("cc-param", f"{name} must be >= 0, got {value}")
    if name in ("mtu_bytes", "timer_s", "alpha_period_s", "byte_reset_bytes") and value <= 0:
        raise FabricsimError("cc-param", f"{name} must be > 0, got {value}")


def parse_cc_params(items: list[str] | tuple[str, ...]) -> dict[str, float]:
    """``["NAME=VALUE", ...]`` -> {name: float}; dashes in names become underscores."""
    out: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep:
            raise FabricsimError("cc-param", f"{item!r} is not NAME=VALUE", "e.g. --cc-param timer_s=1.2e-3")
        key = name.strip().replace("-", "_")
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


def resolved(params: PacketParams, line_Bps: float) -> PacketParams:
    """Fill the line-rate-dependent defaults (HPCC repository rules, bw = line rate in Gb/s)."""
    bw = line_Bps * 8 / 1e9
    return replace(
        params,
        buffer_bytes=params.buffer_bytes if params.buffer_bytes is not None else 16e6 * bw / 50,
        kmin_bytes=params.kmin_bytes if params.kmin_bytes is not None else 100e3 * bw / 25,
        kmax_bytes=params.kmax_bytes if params.kmax_bytes is not None else 400e3 * bw / 25,
        pfc_resume_bytes=params.pfc_resume_bytes if params.pfc_resume_bytes is not None else 2 * params.mtu_bytes,
        hpcc_ai_Bps=params.hpcc_ai_Bps if params.hpcc_ai_Bps is not None else 10 * _MBPS * bw / 25,
    )


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What to simulate with the params: CC, lossless mode, line rate, sampling and seed."""

    cc: CongestionControl
    lossless: Lossless
    line_Bps: float
    sample_dt_s: float
    seed: int


def fec_latency_s(params: PacketParams) -> float:
    """The FEC latency each hop adds (s): :data:`FEC_LATENCY_S` of ``fec_lane_gbps``, 0 when off."""
    return FEC_LATENCY_S.get(int(params.fec_lane_gbps), 0.0)


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
    P[L.P_LOSS_RECOVERY], P[L.P_TRIM], P[L.P_TRIM_BYTES] = p.loss_recovery, p.trimming, p.trim_bytes
    P[L.P_BER], P[L.P_ENTROPIES] = p.ber, p.entropies
    P[L.P_NSCC_TARGET], P[L.P_NSCC_MAXWIN] = p.nscc_target, p.nscc_max_window
    P[L.P_RCCC] = p.rccc
    P[L.P_SAMPLE_DT], P[L.P_SEED] = opts.sample_dt_s, float(opts.seed % (2**31))
    return P
