"""Flow model: max-min fairness, the permutation and oversubscription oracles, conservation."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fabricsim.errors import FabricsimError
from fabricsim.network.analytic import AnalyticNetwork
from fabricsim.network.base import NetworkModel, make_flows
from fabricsim.network.flow import FlowNetwork, max_min_rates
from fabricsim.network.patterns import Pattern, derangement, host_throughput_fraction, pattern_flows
from fabricsim.network.symmetry import simulate_symmetric
from fabricsim.topology.builders import LinkParams, fat_tree, leaf_spine
from fabricsim.topology.routing import Routing, route_table

LINE = 50e9
LINK = LinkParams(LINE, 1e-6)


def test_max_min_textbook_example():
    """Bertsekas & Gallager fig. 6.7 style: links of capacity 1; flow 0 crosses both links,
    flow 1 only link 0, flows 2 and 3 only link 1 -> link 1 saturates first at 1/3 each,
    then flow 1 gets the rest of link 0: 2/3."""
    incidence = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 0, 1, 1]], dtype=float))
    rates = max_min_rates(incidence, np.array([1.0, 1.0]))
    assert rates == pytest.approx([1 / 3, 2 / 3, 1 / 3, 1 / 3])


def test_max_min_with_sprayed_shares_and_empty_columns():
    incidence = sp.csr_matrix(np.array([[0.5, 1.0, 0.0], [0.5, 0.0, 0.0]]))
    rates = max_min_rates(incidence, np.array([3.0, 3.0]))
    assert rates[:2] == pytest.approx([2.0, 2.0]) and np.isinf(rates[2])


def _permutation_throughput(k, routing, seed):
    topo = fat_tree(k, LINK)
    flows = pattern_flows(Pattern.PERMUTATION, topo.hosts, 1e8, seed)
    result = FlowNetwork(route_table(topo), routing, seed).run(flows)
    return host_throughput_fraction(flows, result.finish_s, topo.line_rate_Bps), result


@pytest.mark.parametrize("k", [8, 12])
def test_permutation_ecmp_collisions_halve_throughput_spray_restores_it(k):
    """Hedera (NSDI'10) / NDP (SIGCOMM'17): per-flow ECMP ~0.4-0.5 of line rate; spraying ~1."""
    for seed in (0, 1):
        ecmp, _ = _permutation_throughput(k, Routing.ECMP, seed)
        spray, result = _permutation_throughput(k, Routing.SPRAY, seed)
        assert 0.38 <= ecmp.mean() <= 0.52
        assert spray.min() >= 0.99
        assert result.first_rate_Bps == pytest.approx(np.full(result.first_rate_Bps.size, LINE))


def test_permutation_is_deterministic_for_a_seed():
    a, _ = _permutation_throughput(8, Routing.ECMP, 4)
    b, _ = _permutation_throughput(8, Routing.ECMP, 4)
    assert np.array_equal(a, b)


def test_adaptive_beats_ecmp_on_a_permutation():
    ecmp, _ = _permutation_throughput(8, Routing.ECMP, 2)
    adaptive, _ = _permutation_throughput(8, Routing.ADAPTIVE, 2)
    assert adaptive.mean() > ecmp.mean() + 0.2


@pytest.mark.parametrize("ratio", [1.0, 2.0, 4.0])
def test_all_to_all_on_oversubscribed_leaf_spine_gets_one_over_r(ratio):
    leaves, per_leaf = 16, 8
    topo = leaf_spine(leaves, 4, per_leaf, LINK, oversubscription=ratio)
    flows = pattern_flows(Pattern.ALL_TO_ALL, topo.hosts, 1e6, 0)
    result = FlowNetwork(route_table(topo), Routing.SPRAY, 0).run(flows)
    per_host = host_throughput_fraction(flows, result.finish_s, LINE).mean()
    hosts = topo.hosts
    # intra-leaf flows finish early: a host's rate -> (hosts - 1) / (hosts - per_leaf) / r
    finite_size = (hosts - 1) / (hosts - per_leaf)
    assert per_host == pytest.approx(min(1.0, finite_size / ratio), rel=0.02)
    assert per_host == pytest.approx(1 / ratio, rel=0.08)


def _check_conservation_and_capacity(routes, flows, result):
    assert np.all(np.isfinite(result.finish_s))
    expected = routes.incidence @ flows.size_bytes  # every byte of a flow crosses each of its links
    assert result.link_bytes == pytest.approx(expected, rel=1e-9, abs=1e-3)
    assert result.peak_utilization.max() <= 1 + 1e-9


@pytest.mark.parametrize("routing", list(Routing))
def test_no_link_above_capacity_and_every_byte_arrives(routing):
    topo = fat_tree(4, LINK)
    rng = np.random.default_rng(7)
    src = rng.integers(0, topo.hosts, 60)
    dst = (src + rng.integers(1, topo.hosts, 60)) % topo.hosts
    flows = make_flows(src, dst, rng.uniform(1e5, 1e8, 60), rng.uniform(0, 2e-3, 60))
    model = FlowNetwork(route_table(topo), routing, 1)
    result = model.run(flows)
    _check_conservation_and_capacity(model.routes(flows), flows, result)
    floor = AnalyticNetwork(route_table(topo), routing, 1).run(flows).finish_s
    assert np.all(result.finish_s >= floor * (1 - 1e-9))


def test_uncontended_flow_matches_alpha_beta_and_incast_shares():
    topo = fat_tree(4, LINK)
    table = route_table(topo)
    single = make_flows([0], [15], 1e9)
    flow = FlowNetwork(table).run(single).finish_s[0]
    assert flow == pytest.approx(6e-6 + 1e9 / LINE, rel=1e-12)
    incast = pattern_flows(Pattern.INCAST, 5, 1e9, 0)
    result = FlowNetwork(table).run(incast)
    assert result.first_rate_Bps == pytest.approx(np.full(4, LINE / 4))
    assert result.completion_time_s == pytest.approx(4e9 / LINE, rel=1e-3)


def test_late_arrival_slows_an_earlier_flow():
    table = route_table(fat_tree(4, LINK))
    flows = make_flows([0, 1], [2, 2], [1e9, 1e9], [0.0, 0.01])
    result = FlowNetwork(table).run(flows)
    # flow 0 alone for 10 ms (0.5 GB), then both share 25 GB/s: 0.5 GB more takes 20 ms
    assert result.finish_s[0] == pytest.approx(0.03, rel=1e-3)
    assert result.events >= 2


def test_derangement_has_no_fixed_point():
    perm = derangement(50, np.random.default_rng(0))
    assert sorted(perm) == list(range(50)) and not np.any(perm == np.arange(50))


def test_leaf_pair_symmetry_aggregation_is_exact():

    topo = leaf_spine(4, 2, 4, LINK, oversubscription=2)
    table = route_table(topo)
    flows = pattern_flows(Pattern.ALL_TO_ALL, topo.hosts, 1e6, 0)
    full = FlowNetwork(table, Routing.SPRAY, 0).run(flows)
    folded, classes = simulate_symmetric(table, flows)
    assert classes.members.size == 16
    assert folded.finish_s == pytest.approx(full.finish_s, rel=1e-12)
    assert folded.link_bytes == pytest.approx(full.link_bytes, rel=1e-12)


def test_symmetry_aggregation_refuses_asymmetric_traffic():

    table = route_table(leaf_spine(2, 2, 2, LINK))
    with pytest.raises(FabricsimError, match="not symmetric"):
        simulate_symmetric(table, pattern_flows(Pattern.PERMUTATION, 4, 1e6, 0))


def test_models_satisfy_the_network_model_protocol():

    table = route_table(fat_tree(4, LINK))
    for model in (FlowNetwork(table), AnalyticNetwork(table)):
        assert isinstance(model.fidelity, str)
        checked: NetworkModel = model
        assert checked.run(make_flows([0], [1], 1.0)).finish_s.size == 1


def test_flow_to_itself_completes_at_its_start_without_warnings():
    """src == dst: an empty path, done at its start time (zero transfer, zero latency), no NaN,
    and it neither delays nor shares bandwidth with the flows that do cross links."""
    import warnings

    topo = fat_tree(4, LINK)
    flows = make_flows([0, 3, 1, 2], [0, 3, 5, 6], [1e6, 0.0, 1e8, 1e8], [0.5, 1e-6, 0.0, 0.0])
    model = FlowNetwork(route_table(topo), Routing.ECMP, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = model.run(flows)
        alone = model.run(make_flows([1, 2], [5, 6], 1e8))
    assert result.finish_s[:2].tolist() == [0.5, 1e-6]
    assert np.isinf(result.first_rate_Bps[:2]).all()
    assert result.finish_s[2:] == pytest.approx(alone.finish_s, rel=1e-12)
    _check_conservation_and_capacity(model.routes(flows), flows, result)
