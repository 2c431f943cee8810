"""FlowSet / make_flows: the optional per-flow rate cap and infinite (background) flows."""

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.network.base import make_flows


def test_flows_are_uncapped_by_default():
    flows = make_flows([0, 1], [1, 0], 1e6)
    assert flows.max_rate_Bps is None
    assert not flows.background.any()


def test_a_cap_broadcasts_and_an_infinite_flow_needs_a_finite_cap():
    flows = make_flows([0, 1], [1, 0], [np.inf, 1e6], max_rate_Bps=[1e9, np.inf])
    assert flows.max_rate_Bps.tolist() == [1e9, np.inf]
    assert flows.background.tolist() == [True, False]
    assert make_flows([0, 1], [1, 0], 1e6, max_rate_Bps=2e9).max_rate_Bps.tolist() == [2e9, 2e9]
    with pytest.raises(FabricsimError, match="infinite size needs a finite max_rate_Bps"):
        make_flows([0, 1], [1, 0], np.inf)
    with pytest.raises(FabricsimError, match="infinite size needs a finite max_rate_Bps"):
        make_flows([0, 1], [1, 0], [np.inf, 1e6], max_rate_Bps=[np.inf, 1e9])


@pytest.mark.parametrize("rate", [0.0, -1.0, np.nan])
def test_a_cap_must_be_positive(rate):
    with pytest.raises(FabricsimError, match="max_rate_Bps must be > 0"):
        make_flows([0], [1], 1e6, max_rate_Bps=rate)


@pytest.mark.parametrize("size", [np.nan, -1.0])
def test_sizes_must_still_be_numbers_at_least_zero(size):
    with pytest.raises(FabricsimError, match="finite and >= 0"):
        make_flows([0], [1], size, max_rate_Bps=1e9)
