"""A failed cube's blast radius with and without optical circuit switching (issue 25 item 3):
slice availability P(Binomial(pool, A) >= cubes) with OCS vs A^cubes wired statically, the cube's
failure rate from the rate set's hardware causes, and the ``ocs`` block of ``goodput`` on TPU pods."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fabricsim import api
from fabricsim.errors import FabricsimError
from fabricsim.reliability.failures import DAY_S, Component, FailureCause
from fabricsim.reliability.ocs import CUBE_CHIPS, Pod, at_least, availability, blast_radius, cube_rate_per_s

V5P = Pod(pool_cubes=140, hosts_per_cube=16, nics_per_cube=64, wired_chips=8960)


def test_at_least_is_the_binomial_tail_in_closed_form() -> None:
    up, pool = 0.97, 144
    assert at_least(pool, pool, up) == pytest.approx(up**pool)
    assert at_least(1, pool, up) == pytest.approx(1.0 - (1.0 - up) ** pool)
    assert at_least(0, pool, up) == pytest.approx(1.0)
    for needed in (100, 130, 138, 140):
        assert at_least(needed, pool, up) == pytest.approx(stats.binom.sf(needed - 1, pool, up), rel=1e-9)
    with pytest.raises(ValueError):
        at_least(pool + 1, pool, up)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.5, 0.9999), st.integers(1, 64), st.integers(1, 64))
def test_ocs_availability_is_never_below_static_and_falls_with_slice_size(up, cubes, extra) -> None:
    pool = cubes + extra
    ocs, static = at_least(cubes, pool, up), up**cubes
    assert ocs >= static * (1 - 1e-12)
    assert at_least(cubes + 1, pool, up) <= ocs * (1 + 1e-12)  # a larger slice is no more available
    assert up ** (cubes + 1) < static


def test_a_cube_fails_at_its_chips_hosts_and_nics_hardware_rates() -> None:
    causes = (
        FailureCause("faulty_gpu", Component.GPU, 1e-9),
        FailureCause("host_maintenance", Component.HOST, 2e-9),
        FailureCause("nic", Component.NIC, 3e-9),
        FailureCause("software_bug", Component.GPU, 5e-9),  # restarts the job, fails no part
        FailureCause("network_switch", Component.SWITCH, 7e-9),  # the data-center network, not the cube
    )
    assert cube_rate_per_s(causes, V5P) == pytest.approx(64 * 1e-9 + 16 * 2e-9 + 64 * 3e-9)
    assert availability(1e-6, 1e5) == pytest.approx(1 / 1.1)


def test_blast_radius_of_a_failed_cube_with_and_without_ocs() -> None:
    causes = (FailureCause("faulty_gpu", Component.GPU, 0.01 / DAY_S / CUBE_CHIPS),)  # 0.01 cube failures a day
    small, large = (blast_radius(chips, V5P, causes, restart_s=600.0) for chips in (128, 130 * 64))
    up = 1.0 / (1.0 + 0.01)  # one day's repair
    assert small.cube_availability == pytest.approx(up)
    assert small.slice_availability_static == pytest.approx(up**2)
    assert large.slice_availability_static == pytest.approx(up**130)
    assert large.slice_availability_ocs == pytest.approx(stats.binom.sf(129, 140, up))
    assert large.slice_availability_ocs < small.slice_availability_ocs
    assert large.slice_availability_ocs > large.slice_availability_static
    assert (small.blast_radius_chips_ocs, small.blast_radius_chips_static) == (128, 8960)
    assert small.resume_s_ocs == pytest.approx(600.0 + small.reconfiguration_s)
    assert small.resume_s_static == pytest.approx(600.0 + DAY_S)
    with pytest.raises(FabricsimError) as caught:
        blast_radius(100, V5P, causes, 600.0)
    assert caught.value.field == "gpus"


GOODPUT = dict(global_batch=1024, seq_len=4096, tp=4, zero=1, days=30, runs=50)


@pytest.mark.parametrize(("system", "pool"), [("tpu-v5p", 140), ("tpu7x", 144)])
def test_goodput_reports_the_ocs_block_on_tpu_pods(system: str, pool: int) -> None:
    block = api.goodput("llama3-8b", system, 256, **GOODPUT).to_json()["ocs"]
    assert block["pool_cubes"] == pool and block["cubes"] == 4
    assert block["blast_radius_chips"] == {"ocs": 256, "static": pool * CUBE_CHIPS}
    assert block["slice_availability"]["ocs"] >= block["slice_availability"]["static"]
    assert block["slice_availability"]["static"] == pytest.approx(block["cube_availability"] ** 4)
    assert block["resume_after_cube_failure_s"]["ocs"] < block["resume_after_cube_failure_s"]["static"]
    assert 0 < block["cube_failures_per_day"] < 1 and math.isfinite(block["reconfiguration_s"])


def test_goodput_has_no_ocs_block_off_tpu_pods() -> None:
    assert "ocs" not in api.goodput("llama3-8b", "dgx-h100", 64, **GOODPUT).to_json()
