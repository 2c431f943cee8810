"""Physical bounds of the collective model over random systems, groups, sizes, ops and algorithms."""

from hypothesis import given
from hypothesis import strategies as st

from fabricsim.catalog import load_system, names
from fabricsim.collectives import (
    Algorithm,
    CollectiveOp,
    bus_factor,
    estimate,
    lower_bound_s,
    place_group,
    rank_bandwidth_Bps,
    runnable,
)

SYSTEMS = names("systems")
IN_NETWORK = (Algorithm.NVLS, Algorithm.SHARP)
POINT_TO_POINT_SINGLE_PATH = (Algorithm.RING, Algorithm.TREE)


@st.composite
def scenarios(draw):
    """(group, op, algorithm, size) with a group size the system allows."""
    system = load_system(draw(st.sampled_from(SYSTEMS)))
    node = system.gpus_per_node
    divisors = [d for d in range(1, node + 1) if node % d == 0]
    if draw(st.booleans()):
        gpus, stride = draw(st.sampled_from(divisors)), 1
    else:
        gpus = node * draw(st.integers(1, 256))
        stride = draw(st.sampled_from([1, 1, node]))
    group = place_group(system, gpus, stride)
    op = draw(st.sampled_from(list(CollectiveOp)))
    algorithm = draw(st.sampled_from([Algorithm.AUTO, *runnable(op, group)]))
    size = draw(st.integers(1, 2**36))
    return group, op, algorithm, size


@given(scenarios())
def test_time_at_least_the_alpha_beta_bound(scenario):
    group, op, algorithm, size = scenario
    result = estimate(op, size, group, algorithm)
    assert result.time_s > 0
    assert result.time_s >= lower_bound_s(op, size, group, result.algorithm in IN_NETWORK)


@given(scenarios(), st.floats(1e-6, 10.0))
def test_time_strictly_increases_with_size(scenario, growth):
    group, op, algorithm, size = scenario
    bigger = size + max(1, int(size * growth))
    assert estimate(op, bigger, group, algorithm).time_s > estimate(op, size, group, algorithm).time_s


@given(scenarios())
def test_bandwidth_never_exceeds_the_bottleneck(scenario):
    group, op, algorithm, size = scenario
    result = estimate(op, size, group, algorithm)
    algbw = size / result.time_s
    busbw = algbw * bus_factor(op, group.ranks)
    limit = rank_bandwidth_Bps(group) * (1 + 1e-9)
    if result.algorithm in IN_NETWORK:
        assert algbw <= limit
    else:
        assert busbw <= limit
    if result.algorithm in POINT_TO_POINT_SINGLE_PATH:
        assert busbw <= group.bottleneck_Bps * (1 + 1e-9)


@given(scenarios())
def test_auto_chooses_a_runnable_algorithm(scenario):
    group, op, _, size = scenario
    chosen = estimate(op, size, group).algorithm
    assert group.ranks == 1 or chosen in runnable(op, group)
