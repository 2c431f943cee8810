"""Every ``--cc-param`` key is type- and range-checked, and a static PFC Xoff must fit the buffer (issue 26)."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest

from fabricsim.errors import FabricsimError
from fabricsim.network.packet.params import RULES, Kind, PacketParams, check_static_xoff, resolved

LINE_BPS = 400e9 / 8


def bad_values(name: str) -> list[float]:
    """Values outside ``name``'s rule: non-finite, below its range, above it, off its kind."""
    rule = RULES[name]
    out = [math.nan, math.inf, -math.inf, rule.low - 1.0]
    if rule.open_low:
        out.append(rule.low)
    if math.isfinite(rule.high):
        out.append(rule.high * 2 + 1)
    if rule.kind != Kind.REAL:
        out.append(rule.low + 0.5)
    return out


def test_every_field_has_a_rule():
    assert set(RULES) == {f.name for f in fields(PacketParams)}


def test_the_defaults_pass_their_rules():
    defaults = PacketParams()
    for name, rule in RULES.items():
        value = getattr(defaults, name)
        assert value is None or rule.refuse(name, float(value)) is None, name


@pytest.mark.parametrize("name", sorted(RULES))
def test_values_outside_the_rule_are_refused_naming_the_key(name):
    for value in bad_values(name):
        with pytest.raises(FabricsimError, match=name) as caught:
            PacketParams().with_overrides({name: value})
        assert caught.value.field == "cc-param"
        assert "\n" not in str(caught.value)


def test_a_fractional_mtu_is_refused():
    # issue 26: mtu_bytes=1.5 ended in "packet kernel stopped with undelivered flows (deadlock?)"
    with pytest.raises(FabricsimError, match="mtu_bytes must be a whole number"):
        PacketParams().with_overrides({"mtu_bytes": 1.5})
    assert PacketParams().with_overrides({"mtu_bytes": 1500.0}).mtu_bytes == 1500.0


def test_flags_take_zero_or_one():
    assert PacketParams().with_overrides({"clamp_target": 1.0}).clamp_target == 1.0
    with pytest.raises(FabricsimError, match="clamp_target must be 0 or 1"):
        PacketParams().with_overrides({"clamp_target": 0.5})


def test_kmin_above_kmax_and_a_buffer_below_one_packet_are_refused():
    with pytest.raises(FabricsimError, match="kmin_bytes"):
        resolved(PacketParams(kmin_bytes=2e6, kmax_bytes=1e6), LINE_BPS)
    with pytest.raises(FabricsimError, match="one 4096 B packet"):
        resolved(PacketParams(buffer_bytes=1000.0), LINE_BPS)


def test_a_static_xoff_must_fit_every_ingress_in_the_shared_pool():
    ports, pool = np.array([4, 8]), np.array([2e6, 2e6])
    fits = 2e6 / 8 - 4096  # the 8-port switch decides
    check_static_xoff(PacketParams(pfc_xoff_bytes=fits), ports, pool)
    check_static_xoff(PacketParams(pfc_xoff_bytes=0.0), ports, pool)  # the dynamic threshold: no check
    with pytest.raises(FabricsimError, match="pfc_xoff_bytes=1e\\+08 overflows a switch buffer") as caught:
        check_static_xoff(PacketParams(pfc_xoff_bytes=1e8), ports, pool)
    assert f"pfc_xoff_bytes <= {fits:.0f}" in str(caught.value)
    with pytest.raises(FabricsimError):
        check_static_xoff(PacketParams(pfc_xoff_bytes=fits + 1), ports, pool)
