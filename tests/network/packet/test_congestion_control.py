"""Congestion control scenarios with known outcomes (issue 12, "Done when" 3-5; parameters and
sources in shared/reference/congestion-control.md).

* Victim flow (DCQCN-validation README): H1->R1 and H2->R2 long flows; 15 hosts burst into R2 at
  3 ms for 1 ms at line rate. Under PFC alone the pauses spread (R2's leaf pauses the spine, the
  spine pauses the senders' leaf) and H1's flow to the *uncongested* R1 loses rate; with ECN+DCQCN
  at the reference thresholds (Kmin 5 KB, Kmax 100 KB, Pmax 0.01, timer 50 us, byte counter
  10 MB, g 1/256) that loss is shorter.
* Fairness of 4->1 with the gentle recovery profile (timer 1200 us, AI 1 Mb/s, HAI 10 Mb/s):
  mean Jain >= 0.95 over seeds 0-9 and >= 0.9 on each, the model's spread over 40 seeds, the same
  with CNPs as packets or as a fixed delay (see the test; alpha updated in the firmware's order).
* 255->1: rate-only DCQCN triggers PFC; HPCC's window bound keeps it off (HPCC repository #14).
"""

from __future__ import annotations

import numpy as np
from packet_helpers import goodput, jain, simulate, star

from fabricsim.network.base import make_flows
from fabricsim.network.patterns import Pattern, pattern_flows
from fabricsim.topology.builders import LinkParams, leaf_spine

VALIDATION = {"kmin_bytes": 5e3, "kmax_bytes": 100e3, "pmax": 0.01, "timer_s": 50e-6, "byte_reset_bytes": 10e6}
VALIDATION["g"] = 1 / 256
GENTLE = {"timer_s": 1200e-6, "rai_Bps": 1e6 / 8, "rhai_Bps": 10e6 / 8}
SAMPLE_S = 50e-6


def _victim_run(cc: str):
    line = 40e9 / 8
    topo = leaf_spine(2, 1, 17, LinkParams(line, 330e-9))  # hosts 0-16 on leaf A, 17-33 on leaf B
    src = [0, 1, *range(2, 17)]
    dst = [17, 18] + [18] * 15  # H1=0 -> R1=17, H2=1 -> R2=18, 15 bursters -> R2
    size = [20e6, 20e6] + [line * 1e-3] * 15  # the burst: 1 ms at line rate each
    start = [0.0, 0.0] + [3e-3] * 15
    params = VALIDATION if cc == "dcqcn" else {}
    flows = make_flows(src, dst, size, start)
    return simulate(topo, flows, cc, "pfc", sample_dt_s=SAMPLE_S, seed=1, **params), line


def test_victim_flow_loses_rate_under_pfc_and_dcqcn_shortens_the_loss():
    pfc, line = _victim_run("none")
    dcqcn, _ = _victim_run("dcqcn")
    alone_s = 20e6 / line  # H1 alone on an idle path
    loss_pfc = pfc.finish_s[0] - alone_s
    loss_dcqcn = dcqcn.finish_s[0] - alone_s
    rate = np.diff(pfc.series_delivered[:, 0]) / SAMPLE_S / line
    during = rate[int(3.5e-3 / SAMPLE_S) : int(4.0e-3 / SAMPLE_S)]
    assert during.mean() < 0.3  # the victim crawls while the burst to R2 drains
    assert loss_pfc > 5e-3  # several ms lost (the paper: about 16 ms of under-use with its CC)
    assert pfc.pause_frames[pfc.link_class == 2].sum() > 0  # spread through the fabric
    assert loss_dcqcn < loss_pfc
    assert dcqcn.pause_s.sum() < pfc.pause_s.sum()
    for run in (pfc, dcqcn):
        assert run.drops == 0


def _fairness_run(params: dict, seed: int):
    """4 -> 1 at 100 Gb/s, 60 MB each, starts 0.5 ms apart; Jain index of the flows' mean rates in
    the 4 ms before the first one finishes."""
    topo = star(5, 100)
    flows = make_flows([1, 2, 3, 4], 0, 60e6, np.arange(4) * 0.5e-3)
    run = simulate(topo, flows, "dcqcn", "pfc", sample_dt_s=100e-6, seed=seed, **params)
    end = int(run.finish_s.min() / 100e-6) - 1
    start = end - 40
    rates = (run.series_delivered[end] - run.series_delivered[start]) / (40 * 100e-6)
    return jain(rates), rates.sum() / topo.line_rate_Bps


def test_dcqcn_gentle_recovery_converges_to_a_fair_share():
    """Gentle recovery (timer 1200 us, AI 1 Mb/s, HAI 10 Mb/s) shares a 4 -> 1 port fairly on average
    over seeds, and never unfairly on any one: the claim is about the mean, not about every seed.

    Mechanism: at a cut the target rate Rt takes the current rate whenever the timer *or the byte
    counter* raised it since the previous cut (NVIDIA CLAMP_TGT_RATE_AFTER_TIME_INC = 1 as the
    DCQCN authors' ns-3 implements it). Clamping only after timer increases (this kernel before)
    left Rt at the line rate between 1.2 ms timer expiries, so each byte-counter expiry (every
    2.1 MB sent, i.e. more often for a faster flow) pulled Rc halfway back to the line rate:
    recovery proportional to rate, Jain 0.91-1.00 (seeds 0-5). With AI = 1 Mb/s the additive part
    is tiny and fast recovery returns each flow to its own pre-cut rate, so an imbalance can persist
    (200 MB runs held seed 7 at 0.91): a single seed at >= 0.95 is not a property of the model, the
    mean over seeds is (the reference sweep: 4 of 4 runs).

    Issue 26 (measured 2026-12-02, packet headers on): CNPs as control packets had seemed to make one
    seed unfair (seed 8: 0.832; 0.926 at worst without them, seeds 0-9), and the test was loosened to
    mean >= 0.94, each >= 0.8. Over seeds 0-39 the two were one distribution (mean 0.9475 s.d. 0.041
    minimum 0.829 with CNP packets; 0.9489, 0.043, 0.799 with ``control_packets`` 0): a CNP's arrival
    a few ns earlier or later reorders the random ECN draws, and one seed's outcome is chaotic. The
    CNP path is as the sources say: the NP sends at most one CNP per ``cnp_interval_s`` *per flow*
    (DCQCN's NP, Zhu et al. SIGCOMM'15; ConnectX MIN_TIME_BETWEEN_CNPS 4 us) and a CNP never queues
    behind data (every egress serves its control queue first; here it waits at most for a few 66 B
    ACKs). What was wrong was alpha: the firmware updates it once per DCE_TCP_RTT in time order
    (alpha = cnp_received x g + (1 - g) alpha; reaction.py), the kernel applied the previous CNP's
    increment after the quiet periods' decay, an alpha up to g too high at each cut, more so for a
    flow with fewer CNPs. With that fixed, seeds 0-39: mean 0.9640, s.d. 0.018, minimum 0.919, none
    under 0.9 (``control_packets`` 0: 0.9643, 0.018, 0.910); seeds 0-9: mean 0.969, minimum 0.938.
    The bounds below are that 40-seed spread (a 10-seed mean has s.d. ~0.006), not these ten seeds.
    """
    results = [_fairness_run(GENTLE, seed) for seed in range(10)]
    fairness = [f for f, _ in results]
    assert sum(fairness) / len(fairness) >= 0.95
    assert min(fairness) >= 0.9
    # payload utilisation: the headers take 82 of every 4,178 B on the wire (RoCEv2, params.HEADERS)
    assert min(utilization for _, utilization in results) > 0.97 * goodput()


def test_dcqcn_with_timer_driven_increase_converges_to_a_fair_share():
    """AIMD converges when the timer (equal for every flow) drives the additive increase: the
    aggressive profile of the same sweep (timer 75 us, AI 50 Mb/s, HAI 500 Mb/s).

    Seeds 0-39 (2026-12-02): mean 0.984, s.d. 0.0125, minimum 0.947, one seed under 0.95 (seed 1,
    0.947); before the alpha fix (see the gentle test) 0.988, 0.0105, 0.948, also one under 0.95 (seed
    27). A per-seed 0.95 was never a property of the model: the floor is the 40-seed spread."""
    aggressive = {"timer_s": 75e-6, "rai_Bps": 50e6 / 8, "rhai_Bps": 500e6 / 8}
    results = [_fairness_run(aggressive, seed) for seed in (0, 1, 2)]
    assert sum(f for f, _ in results) / len(results) >= 0.97
    for fairness, utilization in results:
        assert fairness >= 0.94
        assert utilization > 0.95


def test_large_incast_dcqcn_triggers_pfc_hpcc_does_not():
    topo = star(256, 100, latency_s=1e-6)
    flows = pattern_flows(Pattern.INCAST, 256, 256e3, 0)
    dcqcn = simulate(topo, flows, "dcqcn", "pfc")
    hpcc = simulate(topo, flows, "hpcc", "pfc")
    assert dcqcn.pause_frames.sum() > 0
    assert hpcc.pause_frames.sum() == 0
    assert dcqcn.drops == 0 and hpcc.drops == 0
