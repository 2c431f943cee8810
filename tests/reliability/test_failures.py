"""Per-cause rates scaled by component counts; rerouted vs stopping cable failures."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.reliability.failures import (
    DAY_S,
    Component,
    ComponentCounts,
    FailureCause,
    LinkFailurePolicy,
    cluster_rates,
    rate_from_events,
)

COUNTS = ComponentCounts(gpus=1024, hosts=128, nics=1024, switches=48, cables=2048, fabric_cables=1024)
CAUSES = (
    FailureCause("gpu", Component.GPU, 1e-7),
    FailureCause("host", Component.HOST, 2e-7),
    FailureCause("cable", Component.CABLE, 1e-8),
)


def test_rates_scale_with_the_component_counts():
    rates = cluster_rates(CAUSES, COUNTS, LinkFailurePolicy.STOP)
    assert rates.stop_rate_per_s == pytest.approx([1024e-7, 128 * 2e-7, 2048e-8])
    assert rates.degrade_rate_per_s == 0.0
    assert rates.mttf_s == pytest.approx(1 / rates.stop_rate_per_s.sum())
    doubled = ComponentCounts(2048, 256, 2048, 96, 4096, 2048)
    assert cluster_rates(CAUSES, doubled, LinkFailurePolicy.STOP).mttf_s == pytest.approx(rates.mttf_s / 2)


def test_rerouting_moves_the_switch_to_switch_cable_share_out_of_the_stops():
    stop = cluster_rates(CAUSES, COUNTS, LinkFailurePolicy.STOP)
    reroute = cluster_rates(CAUSES, COUNTS, LinkFailurePolicy.REROUTE)
    assert reroute.degrade_rate_per_s == pytest.approx(1024e-8)  # half the cables are switch-switch
    assert reroute.stop_rate_per_s[2] == pytest.approx(1024e-8)  # NIC-switch cables still stop the job
    assert reroute.total_per_s + reroute.degrade_rate_per_s == pytest.approx(stop.total_per_s)
    assert reroute.mttf_s > stop.mttf_s


def test_rate_from_events():
    assert rate_from_events(419, 16384, 54) == pytest.approx(419 / (16384 * 54 * DAY_S))
    with pytest.raises(FabricsimError):
        rate_from_events(1, 0, 54)


def test_bad_rates_are_user_errors():
    with pytest.raises(FabricsimError):
        cluster_rates((FailureCause("x", Component.GPU, float("nan")),), COUNTS, LinkFailurePolicy.STOP)
    with pytest.raises(FabricsimError):
        cluster_rates((), COUNTS, LinkFailurePolicy.STOP)


def test_no_failures_means_infinite_mttf():
    rates = cluster_rates((FailureCause("gpu", Component.GPU, 0.0),), COUNTS, LinkFailurePolicy.STOP)
    assert rates.mttf_s == float("inf") and np.all(rates.stop_rate_per_s == 0)
