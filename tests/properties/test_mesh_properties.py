"""Physics of a full-mesh scale-up domain (issue 25, Done-when): on an 8-GPU MI300X node (7
Infinity Fabric links per GPU, one per peer), no all-to-all or all-reduce the model can pick or be
forced to run beats the link bounds of the mesh, over random sizes and group sizes.

The bound is computed here from the catalog link alone: a rank of an r-GPU group on the mesh can
use only its r - 1 pair links, each ``link_Bps`` per direction, and must send (r-1)/r S for an
all-to-all and 2(r-1)/r S for an all-reduce (Patarasuk & Yuan, JPDC 2009)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.catalog import load_link, load_system
from fabricsim.collectives import Algorithm, CollectiveOp, estimate, place_group, runnable

MESH_SYSTEMS = ("mi300x-8", "mi325x-8", "mi355x-8", "gaudi3-8")
LINKS_PER_PEER = {"mi300x-8": 1, "mi325x-8": 1, "mi355x-8": 1, "gaudi3-8": 3}  # 7 IF links / 7 peers; 21 ports / 7
VOLUME = {CollectiveOp.ALL_TO_ALL: 1.0, CollectiveOp.ALL_REDUCE: 2.0}


def _link_bound_s(name: str, op: CollectiveOp, size: int, ranks: int) -> float:
    system = load_system(name)
    pair_Bps = LINKS_PER_PEER[name] * load_link(system.scale_up.link.name).bandwidth_Bps
    return VOLUME[op] * (ranks - 1) / ranks * size / ((ranks - 1) * pair_Bps)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(MESH_SYSTEMS),
    op=st.sampled_from(list(VOLUME)),
    ranks=st.sampled_from([2, 4, 8]),
    size=st.integers(1, 2**36),
    data=st.data(),
)
def test_mesh_collectives_never_beat_the_link_bounds(name, op, ranks, size, data) -> None:
    group = place_group(load_system(name), ranks)
    algorithm = data.draw(st.sampled_from([Algorithm.AUTO, *runnable(op, group)]))
    assert estimate(op, size, group, algorithm).time_s >= _link_bound_s(name, op, size, ranks) * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(op=st.sampled_from(list(VOLUME)), size=st.integers(2**20, 2**36))
def test_the_mi300x_mesh_reaches_its_link_bound_for_large_messages(op, size) -> None:
    """The bound is tight: the 8-GPU mesh form is within its latency of the bound (so the test above
    would fail if the model used the GPU's 7 links for any one peer, or a switch's bandwidth)."""
    group = place_group(load_system("mi300x-8"), 8)
    t = estimate(op, size, group, Algorithm.MESH).time_s
    assert t - _link_bound_s("mi300x-8", op, size, 8) < 50e-6
