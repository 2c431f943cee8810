"""Pipeline schedules: bubble and in-flight micro-batches."""

import pytest

from fabricsim.workload.pipeline import (
    bubble_stage_times,
    in_flight_microbatches,
    p2p_transfers_per_microbatch,
)


def test_bubble_of_1f1b_and_interleaved() -> None:
    assert bubble_stage_times(1, 1) == 0
    assert bubble_stage_times(8, 1) == 7
    assert bubble_stage_times(8, 2) == 3.5


def test_in_flight_microbatches() -> None:
    assert in_flight_microbatches(8, 1, 64) == 8
    assert in_flight_microbatches(8, 1, 4) == 4
    assert in_flight_microbatches(8, 3, 64) == pytest.approx(8 * (1 + 7 / 24))
    assert in_flight_microbatches(1, 1, 64) == 1


def test_p2p_transfers() -> None:
    assert p2p_transfers_per_microbatch(1, 1) == 0
    assert p2p_transfers_per_microbatch(4, 3) == 6
