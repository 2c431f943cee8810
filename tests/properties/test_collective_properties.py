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
from fabricsim.collectives.nccl import constants
from fabricsim.collectives.p2p import send_recv_channels

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
    """Time grows with size, except where NCCL itself makes it drop: a send/recv inside a domain
    runs on NCCL's channel count for its size (collectives/p2p.py, src/enqueue.cc addP2pToPlan),
    which doubles at size steps (8 x A100: 8 channels at 128 MiB, 16 at 128 MiB + 1 B). With the
    same channel count time still strictly grows; across a step the count never falls with size
    and time drops at most by the ratio of the counts (latency is unchanged and each byte costs at
    least n_small / n_big of what it cost before)."""
    group, op, algorithm, size = scenario
    bigger = size + max(1, int(size * growth))
    small_t = estimate(op, size, group, algorithm).time_s
    big_t = estimate(op, bigger, group, algorithm).time_s
    n_small = n_big = None
    if op is CollectiveOp.SEND_RECV and group.ranks > 1:
        n_small, n_big = (send_recv_channels(s, group, constants()) for s in (size, bigger))
    if n_small == n_big:
        assert big_t > small_t
    else:
        assert n_big > n_small
        assert big_t >= small_t * n_small / n_big * (1 - 1e-12)


@given(scenarios(), st.integers(0, 6))
def test_send_recv_time_drops_only_at_nccls_channel_steps(scenario, exponent):
    """Right after a channel step (a power-of-two multiple of NCCL's maximum part, 16 MiB on NVLink)
    the channel count is at least the one just before, and time drops only if it grew."""
    group, _, _, _ = scenario
    if group.ranks == 1 or group.domains > 1:
        return
    step = 16 * 2**20 * 2**exponent
    before, after = (estimate(CollectiveOp.SEND_RECV, s, group).time_s for s in (step, step + 1))
    n_before, n_after = (send_recv_channels(s, group, constants()) for s in (step, step + 1))
    assert n_after >= n_before
    if n_after == n_before:
        assert after > before


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
