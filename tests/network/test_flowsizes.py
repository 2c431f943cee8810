"""Flow-size CDFs and open-loop Poisson arrivals (HPCC repository's traffic generator)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.network.flowsizes import FlowSizeCdf, mean_bytes, parse_cdf, poisson_flows, sample_sizes


def test_means_match_the_reference_figures():
    # shared/reference/congestion-control.md: linear interpolation between the points
    assert mean_bytes(FlowSizeCdf.WEBSEARCH) == pytest.approx(1_711_250)
    assert mean_bytes(FlowSizeCdf.FB_HADOOP) == pytest.approx(120_420.75)


@pytest.mark.parametrize("cdf", list(FlowSizeCdf))
def test_sampled_sizes_follow_the_cdf(cdf):
    sizes = sample_sizes(cdf, 400_000, np.random.default_rng(0))
    assert sizes.mean() == pytest.approx(mean_bytes(cdf), rel=0.03)
    assert sizes.min() >= 1


def test_poisson_arrivals_offer_the_requested_load():
    line_Bps, hosts, duration = 50e9, 8, 20e-3
    flows = poisson_flows(FlowSizeCdf.FB_HADOOP, hosts, 0.4, duration, (line_Bps, 1))
    offered = flows.size_bytes.sum() / (hosts * duration * line_Bps)
    assert offered == pytest.approx(0.4, rel=0.1)
    assert np.all(flows.src != flows.dst)
    assert np.all(np.diff(flows.start_s) >= 0) and flows.start_s.max() < duration
    again = poisson_flows(FlowSizeCdf.FB_HADOOP, hosts, 0.4, duration, (line_Bps, 1))
    np.testing.assert_array_equal(flows.size_bytes, again.size_bytes)


@pytest.mark.parametrize(
    ("field", "args"), [("load", (4, 1.5, 1e-3)), ("duration", (4, 0.3, -1.0)), ("hosts", (1, 0.3, 1e-3))]
)
def test_bad_arrival_inputs_name_the_field(field, args):
    hosts, load, duration = args
    with pytest.raises(FabricsimError, match=field):
        poisson_flows(FlowSizeCdf.WEBSEARCH, hosts, load, duration, (50e9, 0))


def test_unknown_cdf_suggests_names():
    with pytest.raises(FabricsimError, match="websearch"):
        parse_cdf("websearh")
