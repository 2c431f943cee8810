"""The channel-load all-to-all bound of a whole torus, regular or twisted (collectives/torus.py)."""

import pytest

from fabricsim.collectives.torus import all_to_all_s_per_byte, lattice_all_to_all_s_per_byte

LINK_Bps = 1e11


@pytest.mark.parametrize("dims", [(4,), (8,), (4, 4), (4, 8), (8, 4, 4), (4, 4, 8), (4, 8, 8), (12, 4, 8)])
def test_regular_torus_channel_load_equals_the_bisection_bound(dims):
    rings = tuple((n, 2 * LINK_Bps) for n in dims)  # every dimension wrapped: 2 links per direction
    lattice = lattice_all_to_all_s_per_byte(dims, False, (LINK_Bps,) * len(dims))
    assert lattice == pytest.approx(all_to_all_s_per_byte(rings), rel=1e-12)


@pytest.mark.parametrize("dims", [(4, 4, 8), (8, 4, 4), (4, 8, 8), (8, 8, 16)])
def test_a_twist_lowers_the_all_to_all_time_but_not_below_injection(dims):
    links = (LINK_Bps,) * 3
    regular, twisted = (lattice_all_to_all_s_per_byte(dims, t, links) for t in (False, True))
    p = dims[0] * dims[1] * dims[2]
    assert (p - 1) / p / (6 * LINK_Bps) <= twisted < regular


def test_twist_gain_does_not_depend_on_the_axis_order():
    links = (LINK_Bps,) * 3
    gains = [lattice_all_to_all_s_per_byte(d, False, links) / lattice_all_to_all_s_per_byte(d, True, links)
             for d in ((4, 4, 8), (4, 8, 4), (8, 4, 4))]  # fmt: skip
    assert gains == pytest.approx([gains[0]] * 3, rel=1e-9)
