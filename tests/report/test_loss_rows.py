"""Tables show the packet transport's resent bytes and trimmed packets when there were any (issue 26, item 7)."""

from __future__ import annotations

from fabricsim.report.fabric_rows import network_rows

NETWORK = {"topology": "dgx-h100-16", "fidelity": "packet", "transport": "uet", "routing": "spray",
           "placement": "packed", "background": None, "dimensions": {}, "exposed_s": {}, "pause_s": 0.0,
           "pause_frames": 0, "ecn_marked_fraction": 0.0, "drops": 3, "mixes_timed": 1, "network_runs": 1,
           "rounds": 1, "retransmitted_bytes": 0, "trimmed_packets": 0, "fec_latency_s": 0.0}  # fmt: skip


def test_the_loss_recovery_row_appears_only_when_bytes_were_resent_or_packets_trimmed():
    assert "loss recovery" not in dict(network_rows(NETWORK))
    rows = dict(network_rows({**NETWORK, "retransmitted_bytes": 3 * 2**20, "trimmed_packets": 1200}))
    assert rows["loss recovery"].startswith("3") and "1,200 trimmed" in rows["loss recovery"]
    older = {k: v for k, v in NETWORK.items() if k not in ("retransmitted_bytes", "trimmed_packets")}
    assert "loss recovery" not in dict(network_rows(older))  # results written before the counters
