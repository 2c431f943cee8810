"""The closed-form counts of a rail-optimized Clos equal the counts of the built graph (issue 27:
``train``'s energy figures count the system fabric without building it, so without numpy)."""

from __future__ import annotations

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.topology.builders import LinkParams, RailSpec, rail_optimized
from fabricsim.topology.clos_counts import rail_optimized_inventory
from fabricsim.topology.inventory import count_inventory

LINK = LinkParams(25e9, 1e-6)
# nodes, rails, radix, oversubscription: one node, 2 and 3 tiers, partial groups and pods, fat-tree (rails=1)
SHAPES = [
    (1, 8, 40, 1.0), (2, 8, 40, 1.0), (20, 8, 40, 1.0), (21, 8, 40, 1.0), (384, 8, 40, 1.0), (500, 8, 40, 1.0),
    (128, 8, 64, 1.0), (4096, 8, 64, 1.0), (1000, 4, 64, 3.0), (3072, 1, 64, 1.0), (3, 2, 4, 1.0), (33, 2, 9, 2.5),
    (9, 1, 4, 1.0), (96, 8, 48, 1.5),
]


@pytest.mark.parametrize(("nodes", "rails", "radix", "over"), SHAPES)
def test_closed_form_equals_the_count_of_the_built_graph(nodes, rails, radix, over):
    built = count_inventory(rail_optimized(RailSpec(nodes, rails, radix, LINK, over)), radix)
    assert rail_optimized_inventory(nodes, rails, radix, over) == built


@pytest.mark.parametrize(("nodes", "rails", "radix"), [(0, 8, 40), (4, 0, 40), (4, 8, 1), (7, 3, 2), (100_000, 8, 8)])
def test_none_where_the_builder_refuses(nodes, rails, radix):
    assert rail_optimized_inventory(nodes, rails, radix) is None
    with pytest.raises(FabricsimError):
        rail_optimized(RailSpec(nodes, rails, radix, LINK))
