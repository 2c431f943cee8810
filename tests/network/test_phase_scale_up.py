"""Scale-up domains in packet phases: the background tenant crosses domains only, and the flows
inside a domain (NVLink) are timed without the NIC's transport (network/phase.py)."""

from dataclasses import replace

import numpy as np
import pytest

from fabricsim import catalog
from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows
from fabricsim.network.packet.model import PacketNetwork
from fabricsim.network.phase import (
    BackgroundPattern,
    PacketPhaseNetwork,
    background_flows,
    merged_queue_hist,
    named_transport,
    rebinned,
    scale_up_line_Bps,
)
from fabricsim.topology.builders import LinkParams, fat_tree
from fabricsim.topology.placement import tier_map
from fabricsim.topology.routing import route_table
from fabricsim.topology.system import build_system_topology

LINE_BPS = 50e9


@pytest.fixture(scope="module")
def dgx_table():
    """Two DGX H100 nodes: 16 GPUs, each node one NVSwitch domain, 8 NICs per node."""
    return route_table(build_system_topology(catalog.load_system("dgx-h100"), 16))


@pytest.mark.parametrize("pattern", list(BackgroundPattern))
@pytest.mark.parametrize("sizes", [(8, 8), (8, 8, 8, 8), (72, 28), (4, 4, 4, 1)])
def test_background_flows_cross_scale_up_domains_only_each_sender_offering_the_load(pattern, sizes):
    domains = np.repeat(np.arange(len(sizes)) * 7, sizes)  # any ids, hosts node-major
    hosts = np.arange(domains.size) + 100
    flows = background_flows(pattern, 0.4, hosts, LINE_BPS, seed=3, domains=domains)
    dom = dict(zip(hosts.tolist(), domains.tolist(), strict=True))
    assert flows.count > 0
    assert all(dom[s] != dom[d] for s, d in zip(flows.src.tolist(), flows.dst.tolist(), strict=True))
    offered = np.bincount(flows.src - 100, flows.max_rate_Bps)
    assert np.allclose(offered[offered > 0], 0.4 * LINE_BPS)


@pytest.mark.parametrize("sizes", [(8, 8), (8, 8, 8, 8), (4, 4, 4, 1)])
def test_a_cross_domain_permutation_sends_and_receives_once_per_host(sizes):
    domains = np.repeat(np.arange(len(sizes)), sizes)
    for seed in range(5):
        flows = background_flows("permutation", 1.0, np.arange(domains.size), LINE_BPS, seed, domains)
        assert sorted(flows.src.tolist()) == sorted(flows.dst.tolist()) == list(range(domains.size))


def test_a_domain_of_more_than_half_the_hosts_keeps_only_its_crossing_flows():
    domains = np.repeat([0, 1], [72, 28])  # an NVL72 rack and a part of another
    flows = background_flows("permutation", 1.0, np.arange(100), LINE_BPS, 0, domains)
    assert flows.count == 2 * 28  # every host of the small domain sends and is sent to once


@pytest.mark.parametrize("pattern", list(BackgroundPattern))
def test_one_host_per_domain_draws_the_flows_as_without_domains(pattern):
    plain = background_flows(pattern, 0.5, np.arange(16), LINE_BPS, seed=1)
    alone = background_flows(pattern, 0.5, np.arange(16), LINE_BPS, seed=1, domains=np.arange(16) * 3)
    for field in ("src", "dst", "max_rate_Bps", "label"):
        assert np.array_equal(getattr(plain, field), getattr(alone, field)), field


def test_hosts_all_in_one_domain_are_refused_naming_background():
    with pytest.raises(FabricsimError) as caught:
        background_flows("permutation", 0.5, np.arange(8), LINE_BPS, 0, domains=np.zeros(8))
    assert caught.value.field == "background" and "scale-up domain" in str(caught.value)


def test_the_system_topologys_background_leaves_nvlink_alone(dgx_table):
    domains = tier_map(dgx_table.topology).domain
    flows = background_flows("permutation", 1.0, np.arange(16), LINE_BPS, 0, domains)
    assert np.all(flows.src // 8 != flows.dst // 8)  # node-major GPUs: node = GPU // 8


def _ring(node: int, size: float):
    """One ring step of a TP group on ``node``: GPU i -> i + 1 inside the node."""
    src = node * 8 + np.arange(8)
    return make_flows(src, node * 8 + (np.arange(8) + 1) % 8, size)


def test_flows_inside_one_nvlink_domain_take_the_same_time_under_every_transport(dgx_table):
    finish = {}
    for name in ("ib", "roce", "uet"):
        net = PacketPhaseNetwork(dgx_table, named_transport(name))
        finish[name] = net.run(_ring(0, 8e6)).finish_s
    assert np.array_equal(finish["ib"], finish["roce"]) and np.array_equal(finish["ib"], finish["uet"])
    # NVLink's 450 GB/s, not the NIC's 50 GB/s share: 8 MB in well under the NIC's 160 us
    assert finish["uet"].max() < 8e6 / LINE_BPS / 2


def test_a_phase_mixing_nvlink_and_nic_flows_times_the_nvlink_ones_as_alone(dgx_table):
    inside = _ring(0, 8e6)
    across = make_flows(np.arange(8, 16), np.arange(8), 8e6)  # node 1 -> node 0 over the NICs
    mixed = make_flows(np.r_[inside.src, across.src], np.r_[inside.dst, across.dst], 8e6)
    net = PacketPhaseNetwork(dgx_table, named_transport("uet"))
    alone = net.run(inside).finish_s
    both = net.run(mixed).finish_s
    assert np.array_equal(both[:8], alone)
    assert both[8:].min() > 8e6 / LINE_BPS  # the NIC flows at most at the NIC share


def test_the_scale_up_run_takes_nvlinks_rate_as_its_line_rate(dgx_table):
    nvlink = catalog.load_system("dgx-h100").scale_up.bandwidth_Bps
    assert dgx_table.topology.line_rate_Bps == LINE_BPS  # the topology's: a GPU's NIC share
    assert scale_up_line_Bps(dgx_table.topology) == nvlink
    net = PacketPhaseNetwork(dgx_table, named_transport("uet"))
    assert net.scale_up.opts.line_Bps == nvlink and net.network.opts.line_Bps == LINE_BPS


def test_nvlinks_line_rate_leaves_the_times_alone_and_fixes_the_ideal(dgx_table):
    """Without sender CC the kernel's line rate paces nothing, so finish times are as with the NIC
    share; the ideal FCT (alone on an empty network) was above the measured one at the NIC share."""
    net = PacketPhaseNetwork(dgx_table, named_transport("ib"))
    flows = _ring(0, 8e6)
    old = replace(net.scale_up.opts, line_Bps=LINE_BPS)
    before = PacketNetwork(dgx_table, net.scale_up.routing, net.scale_up.params, old).simulate(flows)
    after = net.scale_up.simulate(flows)
    assert np.array_equal(after.finish_s, before.finish_s)
    assert np.all(before.ideal_fct_s > before.finish_s)  # 8 MB / 50 GB/s: slower than what NVLink did
    assert np.all(after.ideal_fct_s <= after.finish_s)


def test_a_topology_without_nvlink_keeps_its_line_rate():
    fat = route_table(fat_tree(4, LinkParams(LINE_BPS, 1e-6)))
    assert scale_up_line_Bps(fat.topology) == fat.topology.line_rate_Bps


def test_queue_histograms_of_different_bins_merge_at_the_widest():
    rng = np.random.default_rng(0)
    fine, coarse = rng.integers(0, 5, (3, 64)).astype(float), rng.integers(0, 5, (3, 64)).astype(float)
    assert rebinned(fine, 100.0, 100.0) is fine
    merged, width = merged_queue_hist([(fine, 100.0, 2.0), (coarse, 400.0, 1.0)])
    assert width == 400.0
    assert np.allclose(merged.sum(axis=1), 2 * fine.sum(axis=1) + coarse.sum(axis=1))  # nothing lost
    assert np.allclose(merged[:, 0], 2 * fine[:, :4].sum(axis=1) + coarse[:, 0])  # 0..399 B: fine bins 0-3
    assert np.allclose(merged[:, 16:], coarse[:, 16:])  # the fine bins end at 6,400 B
