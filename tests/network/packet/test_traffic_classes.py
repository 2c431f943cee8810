"""Traffic classes (issue 26, item 3): one data FIFO per class at every switch egress, strict
priority or deficit round robin between them, PFC per priority, and lossy or lossless per class.
The job's flows run in class 0, a background tenant's (flows of infinite size) in
``background_class``."""

from __future__ import annotations

import numpy as np
import pytest
from packet_helpers import goodput, simulate, star

from fabricsim.api.topologies import build_topology as parse_topology
from fabricsim.errors import FabricsimError
from fabricsim.network.base import FlowSet
from fabricsim.network.packet.params import PacketParams, parse_cc_params

MB = 1e6
TWO = {"classes": 2.0, "background_class": 1.0}


def flows(src, dst, size, line_Bps: float) -> FlowSet:
    """Flows starting at 0; the infinite ones (background) capped at the line rate."""
    size = np.asarray(size, float)
    cap = np.where(np.isfinite(size), np.inf, line_Bps)
    return FlowSet(np.array(src), np.array(dst), size, np.zeros(size.size), np.arange(size.size), cap)


def rates(run, line_Bps: float) -> tuple[float, float]:
    """(the job flow's rate, the background flow's rate) as fractions of the line rate: flow 0 is
    the job (its size over its FCT), flow 1 a background flow (its bytes over the run)."""
    job = run.flows.size_bytes[0] / run.finish_s[0] / line_Bps
    return job, run.delivered_bytes[1] / run.end_s / line_Bps


def test_strict_priority_gives_the_high_class_its_full_rate():
    """A job flow (class 0) and a background flow at line rate (class 1) into one host: under
    strict priority the job runs at its ideal rate (as if alone) and the background gets next to
    nothing meanwhile; with one class they split the link."""
    topo = star(3, 100)
    line = topo.line_rate_Bps
    both = flows([1, 2], [0, 0], [4 * MB, np.inf], line)
    strict = simulate(topo, both, "none", "pfc", **TWO)
    job, bg = rates(strict, line)
    assert strict.finish_s[0] == pytest.approx(strict.ideal_fct_s[0], rel=0.01)
    assert job == pytest.approx(goodput(), rel=0.01)
    assert bg < 0.01
    shared_job, shared_bg = rates(simulate(topo, both, "none", "pfc"), line)
    assert shared_job == pytest.approx(goodput() / 2, rel=0.05)
    assert shared_bg == pytest.approx(goodput() / 2, rel=0.05)


@pytest.mark.parametrize("weights", [(3.0, 1.0), (1.0, 3.0)])
def test_weighted_round_robin_splits_the_bottleneck_in_the_weights_ratio(weights):
    """DWRR with weights w0:w1 on the bottleneck egress: the two classes' rates are in that ratio
    (within 3 %) and together fill the link."""
    topo = star(3, 100)
    line = topo.line_rate_Bps
    run = simulate(topo, flows([1, 2], [0, 0], [4 * MB, np.inf], line), "none", "pfc",
                   **TWO, class_sched=1.0, class_weights=weights)  # fmt: skip
    job, bg = rates(run, line)
    assert job / bg == pytest.approx(weights[0] / weights[1], rel=0.03)
    assert job + bg == pytest.approx(goodput(), rel=0.02)


def test_per_priority_pfc_pauses_only_the_congested_class():
    """Leaf-spine, one spine (400 Gb/s spine links, 100 Gb/s hosts): hosts 1, 4, 5 send background
    (class 1) to host 6 (a 3:1 incast on its port), so PFC pauses class 1 back over the spine ->
    leaf 1 link; a job flow 0 -> 7 (class 0) crosses the same leaf 0 -> spine -> leaf 1 links. With
    one class its packets wait behind the paused background (head-of-line blocking) and it runs at
    about the background's third of host 6's port (measured 0.34 of line); with two classes only
    class 1 is paused and the job keeps its full rate (0.98 of line, its goodput)."""
    topo = parse_topology("leaf-spine:leaves=2,spines=1,hosts_per_leaf=4,gbps=100")
    line = topo.line_rate_Bps
    mix = flows([0, 1, 4, 5], [7, 6, 6, 6], [8 * MB, np.inf, np.inf, np.inf], line)
    spine_to_leaf1 = int(np.flatnonzero((topo.link_src == 10) & (topo.link_dst == 9))[0])
    one = simulate(topo, mix, "none", "pfc", buffer_bytes=4 * MB)
    two = simulate(topo, mix, "none", "pfc", buffer_bytes=4 * MB, **TWO, class_sched=1.0)
    hol, free = rates(one, line)[0], rates(two, line)[0]
    assert one.pause_s[spine_to_leaf1] > 0 and two.pause_s[spine_to_leaf1] > 0  # class 1 is paused there
    assert hol < 0.45 * goodput()
    assert free == pytest.approx(goodput(), rel=0.02)
    assert one.drops == two.drops == 0


def test_a_nic_sends_by_class_and_holds_only_its_paused_class():
    """Host 1 sends a job flow to host 2 (class 0) and background to host 0 (class 1), which host 3
    also sends background to (1 MB buffer): PFC pauses class 1 at host 1's port. Under strict priority the NIC
    sends the job first (its full rate, as if alone); under DWRR it keeps sending the job while
    class 1 is paused, and nothing is dropped (a NIC that ignored the pause would overflow the
    switch's headroom)."""
    topo = star(4, 100)
    line = topo.line_rate_Bps
    mix = flows([1, 1, 3], [2, 0, 0], [4 * MB, np.inf, np.inf], line)
    uplink = int(np.flatnonzero(topo.link_src == topo.endpoints[1])[0])
    strict = simulate(topo, mix, "none", "pfc", buffer_bytes=1e6, **TWO)
    assert rates(strict, line)[0] == pytest.approx(goodput(), rel=0.01)
    wrr = simulate(topo, mix, "none", "pfc", buffer_bytes=1e6, **TWO, class_sched=1.0)
    assert wrr.pause_s[uplink] > 0 and wrr.drops == 0
    assert rates(wrr, line)[0] > 0.45 * goodput()


def test_a_lossy_class_drops_at_its_cap_while_the_lossless_class_does_not():
    """Two background senders (class 1, lossy, 64 KiB drop-tail cap) and a job flow (class 0,
    lossless) into one host: only class 1 drops; the job's bytes all arrive. All lossless: no drop."""
    topo = star(4, 100)
    line = topo.line_rate_Bps
    mix = flows([1, 2, 3], [0, 0, 0], [4 * MB, np.inf, np.inf], line)
    lossy = simulate(topo, mix, "none", "pfc", **TWO, class_sched=1.0, class_lossless=(1.0, 0.0),
                     class_queue_bytes=(0.0, 65536.0), loss_recovery=1.0)  # fmt: skip
    assert lossy.class_drops[1] > 0 and lossy.class_drops[0] == 0
    assert lossy.delivered_bytes[0] == 4 * MB
    lossless = simulate(topo, mix, "none", "pfc", **TWO, class_sched=1.0)
    assert lossless.class_drops == (0, 0)


@pytest.mark.parametrize(
    ("items", "match"),
    [
        (["classes=9"], "classes must be"),
        (["classes=1.5"], "classes must be a whole number"),
        (["class_sched=fair"], "class_sched must be one of strict | wrr"),
        (["class_weights=3,x"], "class_weights must be comma-separated numbers"),
        (["class_weights=3,0"], "class_weights must be in"),
        (["class_lossless=1,2"], "class_lossless must be 0 or 1"),
        (["class_queue_bytes=10"], "class_queue_bytes must be 0 or in"),
        (["background_class=8"], "background_class must be"),
    ],
)
def test_bad_class_values_are_refused_naming_the_key(items, match):
    with pytest.raises(FabricsimError, match=match) as caught:
        PacketParams().with_overrides(parse_cc_params(items))
    assert caught.value.field == "cc-param" and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("overrides", "lossless", "match"),
    [
        ({"classes": 2.0, "class_weights": (1.0, 2.0, 3.0)}, "pfc", "class_weights has 3 values for classes=2"),
        ({"background_class": 1.0}, "pfc", "background_class=1 needs classes > 1"),
        ({"classes": 2.0}, "credit", "classes=2 needs --lossless pfc or none"),
        ({"classes": 2.0, "class_lossless": (1.0, 0.0)}, "none", "class_lossless=1 for a class needs --lossless pfc"),
        ({"classes": 2.0, "class_queue_bytes": (0.0, 1000.0)}, "none", "below one"),
    ],
)
def test_class_settings_that_do_not_fit_together_are_refused(overrides, lossless, match):
    topo = star(3, 100)
    with pytest.raises(FabricsimError, match=match):
        simulate(topo, flows([1], [0], [MB], topo.line_rate_Bps), "none", lossless, **overrides)


@pytest.mark.parametrize("value", ["class_sched=fair", "class_weights=3,1"])
def test_the_cli_refuses_a_bad_class_value_in_one_line_with_status_2(value, capsys):
    """``class_weights=3,1`` alone is refused too: one weight per class, and classes is 1."""
    from fabricsim.cli.app import main

    rc = main(["traffic", "incast", "--topology", "fat-tree:k=4", "--hosts", "4", "--size", "64KiB",
               "--fidelity", "packet", "--cc-param", value])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: cc-param: ") and err.count("\n") == 1, err
    assert value.split("=")[0] in err and "Traceback" not in err


def test_traffic_with_a_matrix_class_column_runs_each_flow_in_its_class(tmp_path):
    """``traffic --matrix`` with a class column and ``classes=2`` (strict): of two 4 MB flows into
    one host, the class-0 flow finishes at its ideal time and the class-1 flow about one FCT later;
    without the column they share the port and finish together."""
    from fabricsim.api.packet_traffic import PacketTrafficSpec, packet_traffic

    path = tmp_path / "m.csv"
    path.write_text("src,dst,bytes,class\n1,0,4e6,1\n2,0,4e6,0\n", encoding="utf-8")
    spec = PacketTrafficSpec(pattern=None, topology="fat-tree:k=4", matrix=str(path), cc_params=("classes=2",))
    run = packet_traffic(spec).run
    assert run.finish_s[1] == pytest.approx(run.ideal_fct_s[1], rel=0.01)
    assert run.finish_s[0] == pytest.approx(2 * run.ideal_fct_s[0], rel=0.05)
    path.write_text("src,dst,bytes\n1,0,4e6\n2,0,4e6\n", encoding="utf-8")
    run = packet_traffic(spec).run
    assert run.finish_s[0] == pytest.approx(run.finish_s[1], rel=0.02)
    path.write_text("src,dst,bytes,class\n1,0,4e6,2\n", encoding="utf-8")
    with pytest.raises(FabricsimError, match="a flow is in traffic class 2 but classes=2"):
        packet_traffic(spec)


def test_the_json_reports_each_class_only_with_several_classes(tmp_path, capsys):
    """``traffic --json`` gains ``by_class`` (flows, FCTs, drops per class) with classes=2; with one
    class the keys are as before."""
    import json

    from fabricsim.cli.app import main

    path = tmp_path / "m.csv"
    path.write_text("src,dst,bytes,class\n1,0,4e6,1\n2,0,4e6,0\n3,0,4e6,1\n", encoding="utf-8")
    argv = ["traffic", "--matrix", str(path), "--topology", "fat-tree:k=4", "--fidelity", "packet", "--json"]
    assert main([*argv, "--cc-param", "classes=2"]) == 0
    classes = json.loads(capsys.readouterr().out)["by_class"]
    assert [classes[c]["flows"] for c in ("0", "1")] == [1, 2]
    assert classes["0"]["fct_s"]["max"] < 0.4 * classes["1"]["fct_s"]["max"]  # alone, then 2 flows after it
    assert classes["0"]["drops"] == classes["1"]["drops"] == 0
    path.write_text("src,dst,bytes\n1,0,4e6\n2,0,4e6\n3,0,4e6\n", encoding="utf-8")
    assert main(argv) == 0
    assert "by_class" not in json.loads(capsys.readouterr().out)
